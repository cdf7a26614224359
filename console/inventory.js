// The inventory: pool → host → VM tree, the API's filter in one search box, a windowed VM list
// (smooth at 50,000 rows), bulk actions, and the filtered list exported.
import { useMemo, useRef, useState } from 'preact/hooks'
import { action, api, mayActOn, ndjson } from './api.js'
import { useCollection } from './live.js'
import { html, ActionButton, ErrorBox, StateBadge, download, link, useAsync } from './ui.js'

const ROW = 30
// Templates and snapshots are listed apart from the VMs, each from its own collection.
const TEMPLATES = 'vm-templates'
const SNAPSHOTS = 'vm-snapshots'
const OVERSCAN = 10

function Tree({ pools, hosts, vms, templates, snapshots, selected, select }) {
  const perContainer = useMemo(() => {
    const counts = new Map()
    for (const vm of vms.records.values()) {
      counts.set(vm.$container, (counts.get(vm.$container) ?? 0) + 1)
      counts.set(vm.$pool, (counts.get(vm.$pool) ?? 0) + (vm.$container === vm.$pool ? 0 : 1))
    }
    return counts
  }, [vms.version])
  const item = (id, label, depth) =>
    html`<li class=${'depth-' + depth + (selected === id ? ' selected' : '')}><button class="link" onClick=${() => select(id)}>${label}</button> <span class="count">${perContainer.get(id) ?? 0}</span></li>`
  return html`<ul class="tree" id="tree">
    <li class=${selected === undefined ? 'selected' : ''}><button class="link" onClick=${() => select(undefined)}>All VMs</button> <span class="count">${vms.records.size}</span></li>
    ${[...pools.records.values()].map(
      (pool) => html`${item(pool.id, pool.name_label, 0)}
        ${[...hosts.records.values()].filter((host) => host.$pool === pool.id).map((host) => item(host.id, host.name_label, 1))}`,
    )}
    <li class=${'apart' + (selected === TEMPLATES ? ' selected' : '')}><button class="link" onClick=${() => select(TEMPLATES)}>Templates</button> <span class="count">${templates.records.size}</span></li>
    <li class=${'apart' + (selected === SNAPSHOTS ? ' selected' : '')}><button class="link" onClick=${() => select(SNAPSHOTS)}>Snapshots</button> <span class="count">${snapshots.records.size}</span></li>
  </ul>`
}

const COLUMNS = ['name_label', 'power_state', 'mainIpAddress', 'tags', 'id']

function toCsv(rows) {
  const cell = (value) => {
    const text = Array.isArray(value) ? value.join(' ') : String(value ?? '')
    return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
  }
  return [COLUMNS.join(','), ...rows.map((vm) => COLUMNS.map((column) => cell(vm[column])).join(','))].join('\n') + '\n'
}

/** Runs one request per VM, a few at a time; the first refusals are kept to be shown. */
async function forEach(ids, run) {
  const queue = [...ids]
  const errors = []
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          await run(id)
        } catch (error) {
          errors.push(error)
        }
      }
    }),
  )
  if (errors.length > 0) throw errors[0]
}

function Bulk({ selection, clear }) {
  const [tag, setTag] = useState('')
  const ids = [...selection]
  const bulk = (name) => () => forEach(ids, (id) => action('vms', id, name))
  if (ids.length === 0) return null
  // Offered when allowed on the first VM selected; a VM of the selection that refuses says so.
  const on = (privilege) => ['vm', privilege, ids[0]]
  return html`<div class="bulk" id="bulk">
    <strong>${ids.length} selected</strong>
    <${ActionButton} privilege=${on('start')} run=${bulk('start')}>Start<//>
    <${ActionButton} privilege=${on('shutdown:clean')} run=${bulk('clean_shutdown')}>Stop<//>
    <${ActionButton} privilege=${on('reboot:clean')} run=${bulk('clean_reboot')}>Reboot<//>
    <${ActionButton} privilege=${on('snapshot')} run=${bulk('snapshot')}>Snapshot<//>
    <input placeholder="tag" value=${tag} onInput=${(event) => setTag(event.target.value)} />
    <${ActionButton} privilege=${on('update:tags')} run=${() => forEach(ids, (id) => api(`vms/${id}/tags/${encodeURIComponent(tag)}`, { method: 'PUT' }))}>Tag<//>
    <button class="link" onClick=${clear}>Clear</button>
  </div>`
}

function VmRows({ rows, selection, toggle, selectable, linked }) {
  const box = useRef()
  const [top, setTop] = useState(0)
  const height = 600
  const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN)
  const last = Math.min(rows.length, Math.ceil((top + height) / ROW) + OVERSCAN)
  return html`<div class="rows" ref=${box} style=${{ height: `${height}px` }} onScroll=${(event) => setTop(event.currentTarget.scrollTop)} id="vm-rows">
    <div style=${{ height: `${rows.length * ROW}px`, position: 'relative' }}>
      ${rows.slice(first, last).map(
        (vm, index) => html`<div class="row vm-row" data-id=${vm.id} style=${{ top: `${(first + index) * ROW}px` }}>
          ${selectable && html`<input type="checkbox" aria-label=${'select ' + vm.name_label} checked=${selection.has(vm.id)} onClick=${(event) => toggle(vm.id, first + index, event.shiftKey)} />`}
          ${linked ? html`<a class="name" href=${link('vms', vm.id)}>${vm.name_label}</a>` : html`<span class="name">${vm.name_label}</span>`}
          <${StateBadge} state=${vm.power_state} />
          <span class="ip">${vm.mainIpAddress ?? ''}</span>
          <span class="row-tags">${(vm.tags ?? []).join(', ')}</span>
        </div>`,
      )}
    </div>
  </div>`
}

export function Inventory() {
  const pools = useCollection('pools')
  const hosts = useCollection('hosts')
  const vms = useCollection('vms')
  const templates = useCollection('vm-templates')
  const snapshots = useCollection('vm-snapshots')
  const [container, setContainer] = useState()
  const [text, setText] = useState('')
  const [matching, setMatching] = useState()
  const [filterError, setFilterError] = useState()
  const [selection, setSelection] = useState(new Set())
  const anchor = useRef()
  const mayAct = useAsync(() => mayActOn('vm'), []).value
  const apart = container === TEMPLATES || container === SNAPSHOTS
  const listed = container === TEMPLATES ? templates : container === SNAPSHOTS ? snapshots : vms
  const rows = useMemo(() => {
    const all = []
    for (const vm of listed.records.values()) {
      if (!apart && container !== undefined && vm.$container !== container && vm.$pool !== container) continue
      if (matching !== undefined && !matching.has(vm.id)) continue
      all.push(vm)
    }
    return all
  }, [listed.version, listed.records, container, matching])
  const choose = (next) => {
    // A filter's answer is ids of one collection: another list starts unfiltered.
    if ((next === TEMPLATES || next === SNAPSHOTS || apart) && next !== container) setMatching(undefined)
    setSelection(new Set())
    setContainer(next)
  }
  const search = async (event) => {
    event.preventDefault()
    setFilterError(undefined)
    if (text.trim() === '') return setMatching(undefined)
    // The API evaluates its own filter syntax; the console keeps the ids it answers.
    const ids = new Set()
    try {
      await ndjson(`${apart ? container : 'vms'}?fields=id&filter=${encodeURIComponent(text)}`, (batch) => {
        for (const record of batch) ids.add(record.id)
      })
      setMatching(ids)
    } catch (error) {
      setFilterError(error)
    }
  }
  const toggle = (id, index, range) => {
    const next = new Set(selection)
    if (range && anchor.current !== undefined) {
      const [from, to] = [Math.min(anchor.current, index), Math.max(anchor.current, index)]
      for (const vm of rows.slice(from, to + 1)) next.add(vm.id)
    } else if (next.has(id)) next.delete(id)
    else next.add(id)
    anchor.current = index
    setSelection(next)
  }
  const exported = () => rows.map(({ id, name_label, power_state, mainIpAddress, tags }) => ({ id, name_label, power_state, mainIpAddress, tags }))
  return html`<div class="inventory">
    <aside><${Tree} pools=${pools} hosts=${hosts} vms=${vms} templates=${templates} snapshots=${snapshots} selected=${container} select=${choose} /></aside>
    <section class="list">
      <form class="search" onSubmit=${search}>
        <input id="filter" type="search" placeholder="Filter, as the API reads it: power_state:Running tags:prod" value=${text} onInput=${(event) => setText(event.target.value)} />
        <button type="submit">Filter</button>
      </form>
      <${ErrorBox} error=${filterError} />
      <${ErrorBox} error=${listed.error} />
      <div class="list-head">
        <span id="vm-count">${rows.length} ${container === TEMPLATES ? 'templates' : container === SNAPSHOTS ? 'snapshots' : 'VMs'}${listed.loading ? ' (loading…)' : ''}</span>
        ${mayAct && !apart && html`<button class="link" onClick=${() => setSelection(new Set(rows.map((vm) => vm.id)))}>Select all ${rows.length}</button>`}
        <button class="link" onClick=${() => download('vms.csv', 'text/csv', toCsv(exported()))}>Export CSV</button>
        <button class="link" onClick=${() => download('vms.json', 'application/json', JSON.stringify(exported(), null, 2))}>Export JSON</button>
      </div>
      <${Bulk} selection=${selection} clear=${() => setSelection(new Set())} />
      <${VmRows} rows=${rows} selection=${selection} toggle=${toggle} selectable=${mayAct === true && !apart} linked=${!apart} />
    </section>
  </div>`
}
