// The console's shell: navigation by hash, the live state, the tasks panel, and the views.
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { whoAmI } from './api.js'
import { useLiveStatus } from './live.js'
import { html, useAsync, ErrorBox } from './ui.js'
import { Overview } from './overview.js'
import { Inventory } from './inventory.js'
import { VmPage } from './vm.js'
import { HostPage, PoolPage, SrPage, NetworkPage, StoragePage } from './objects.js'
import { TasksPanel } from './tasks.js'
import { Backups } from './backups.js'
import { Access } from './access.js'

function useHash() {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const changed = () => setHash(location.hash)
    addEventListener('hashchange', changed)
    return () => removeEventListener('hashchange', changed)
  }, [])
  return hash
}

function route(hash) {
  const [name = '', id] = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent)
  switch (name) {
    case '':
      return html`<${Overview} />`
    case 'vms':
      return id === undefined ? html`<${Inventory} />` : html`<${VmPage} id=${id} />`
    case 'hosts':
      return html`<${HostPage} id=${id} />`
    case 'pools':
      return html`<${PoolPage} id=${id} />`
    case 'srs':
      return id === undefined ? html`<${StoragePage} />` : html`<${SrPage} id=${id} />`
    case 'networks':
      return html`<${NetworkPage} id=${id} />`
    case 'backups':
      return html`<${Backups} />`
    case 'access':
      return html`<${Access} />`
    default:
      return html`<p class="empty">No such page.</p>`
  }
}

const sections = [
  ['#/', 'Overview'],
  ['#/vms', 'Inventory'],
  ['#/srs', 'Storage'],
  ['#/backups', 'Backups'],
  ['#/access', 'Access'],
]

function App() {
  const hash = useHash()
  const status = useLiveStatus()
  const me = useAsync(whoAmI, [])
  const [tasksOpen, setTasksOpen] = useState(false)
  const current = '#/' + (hash.replace(/^#\/?/, '').split('/')[0] ?? '')
  return html`<div class="shell">
    <header>
      <a class="brand" href="#/">Keel</a>
      <nav>${sections.map(([href, label]) => html`<a href=${href} class=${current === href ? 'current' : ''}>${label}</a>`)}</nav>
      <span class=${'live live-' + status} id="live-status">${status === 'live' ? 'Live' : status === 'reconnecting' ? 'Reconnecting…' : 'Connecting…'}</span>
      <button class="tasks-toggle" onClick=${() => setTasksOpen(!tasksOpen)}>Tasks</button>
      <span class="who">${me.value?.email ?? ''}</span>
      <form method="post" action="/signout" class="inline"><button type="submit" class="link">Sign out</button></form>
    </header>
    <${ErrorBox} error=${me.error} />
    <main>${route(hash)}</main>
    ${tasksOpen && html`<${TasksPanel} onClose=${() => setTasksOpen(false)} />`}
  </div>`
}

const root = document.getElementById('app')
root.textContent = ''
render(html`<${App} />`, root)
