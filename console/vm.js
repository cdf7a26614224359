// One VM: summary, power actions, snapshots, disks (download, upload), addresses, tags, tasks, charts.
import { action, api, formatBytes, formatTime } from './api.js'
import { useCollection } from './live.js'
import { html, ActionButton, ErrorBox, StateBadge, Table, Tags, link, useAsync } from './ui.js'
import { StatsCharts } from './charts.js'
import { TaskList } from './tasks.js'
import { DiskDownloads, DiskUpload } from './disks.js'

const powerActions = [
  ['start', 'start', 'Start', ['Halted']],
  ['clean_shutdown', 'shutdown:clean', 'Shut down', ['Running']],
  ['hard_shutdown', 'shutdown:hard', 'Power off', ['Running', 'Paused', 'Suspended']],
  ['clean_reboot', 'reboot:clean', 'Reboot', ['Running']],
  ['hard_reboot', 'reboot:hard', 'Hard reboot', ['Running', 'Paused']],
  ['pause', 'pause', 'Pause', ['Running']],
  ['unpause', 'unpause', 'Unpause', ['Paused']],
  ['suspend', 'suspend', 'Suspend', ['Running']],
  ['resume', 'resume', 'Resume', ['Suspended']],
]

function Disk({ vbd, vdi }) {
  return html`<tr class="disk" data-id=${vdi.id}>
    <td>${vbd.device}</td><td>${vdi.name_label}</td><td>${formatBytes(vdi.size)}</td><td>${formatBytes(vdi.usage)}</td>
    <td><${DiskDownloads} vdi=${vdi} /></td>
    <td><${DiskUpload} vdi=${vdi} /></td>
  </tr>`
}

export function VmPage({ id }) {
  const vms = useCollection('vms')
  const snapshots = useCollection('vm-snapshots')
  const vbds = useCollection('vbds')
  const vdis = useCollection('vdis')
  const hosts = useCollection('hosts')
  const pools = useCollection('pools')
  const live = vms.records.get(id)
  const full = useAsync(() => api(`vms/${encodeURIComponent(id)}`), [id, live?.power_state])
  const vm = { ...full.value, ...live }
  if (full.error !== undefined && live === undefined) return html`<${ErrorBox} error=${full.error} />`
  if (vm.id === undefined) return html`<p class="loading">Loading…</p>`
  const mine = [...snapshots.records.values()].filter((snapshot) => snapshot.$snapshot_of === id)
  const disks = [...vbds.records.values()].filter((vbd) => vbd.VM === id && !vbd.is_cd_drive)
  return html`<div class="object-page vm-page" data-id=${id}>
    <h2>${vm.name_label} <${StateBadge} state=${vm.power_state} /></h2>
    <p>${vm.name_description}</p>
    <div class="actions" id="power-actions">
      ${powerActions
        .filter(([, , , states]) => states.includes(vm.power_state))
        .map(([name, privilege, label]) => html`<${ActionButton} privilege=${['vm', privilege, id]} run=${() => action('vms', id, name)}>${label}<//>`)}
    </div>
    <dl class="summary">
      <dt>CPUs</dt><dd>${vm.CPUs?.number}</dd>
      <dt>Memory</dt><dd>${formatBytes(vm.memory?.size)}</dd>
      <dt>Host</dt><dd>${vm.$container === vm.$pool ? '—' : html`<a href=${link('hosts', vm.$container)}>${hosts.records.get(vm.$container)?.name_label ?? vm.$container}</a>`}</dd>
      <dt>Pool</dt><dd><a href=${link('pools', vm.$pool)}>${pools.records.get(vm.$pool)?.name_label ?? vm.$pool}</a></dd>
      <dt>OS</dt><dd>${vm.os_version?.name ?? '—'}</dd>
      <dt>Addresses</dt><dd class="addresses">${Object.entries(vm.addresses ?? {}).map(([key, address]) => html`<span title=${key}>${address}</span> `)}</dd>
      <dt>Tags</dt><dd><${Tags} collection="vms" resource="vm" id=${id} tags=${vm.tags} /></dd>
    </dl>
    <h3>Snapshots</h3>
    <${ActionButton} privilege=${['vm', 'snapshot', id]} run=${() => action('vms', id, 'snapshot', { name_label: `${vm.name_label} ${new Date().toISOString()}` })}>Take snapshot<//>
    <${Table} rows=${mine} empty="No snapshot." columns=${[
      ['Name', (snapshot) => html`<span class="snapshot-name">${snapshot.name_label}</span>`],
      ['Taken', (snapshot) => formatTime(snapshot.snapshot_time * 1000)],
      ['', (snapshot) => html`
        <${ActionButton} privilege=${['vm', 'revert-snapshot', id]} confirm="Revert the VM to this snapshot?" run=${() => action('vms', id, 'revert_snapshot', { snapshotId: snapshot.id })}>Revert<//>
        <${ActionButton} privilege=${['vm-snapshot', 'delete', snapshot.id]} confirm="Delete this snapshot?" run=${() => api(`vm-snapshots/${snapshot.id}`, { method: 'DELETE' })}>Delete<//>`],
    ]} />
    <h3>Disks</h3>
    ${disks.length === 0 ? html`<p class="empty">No disk.</p>` : html`<table><thead><tr><th>Device</th><th>Name</th><th>Size</th><th>Used</th><th>Download</th><th>Upload</th></tr></thead>
      <tbody>${disks.map((vbd) => vdis.records.get(vbd.VDI) && html`<${Disk} vbd=${vbd} vdi=${vdis.records.get(vbd.VDI)} />`)}</tbody></table>`}
    <h3>Statistics</h3>
    <${StatsCharts} collection="vms" id=${id} />
    <h3>Tasks</h3>
    <${TaskList} objectId=${id} />
  </div>`
}
