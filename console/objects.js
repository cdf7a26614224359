// Host, pool, SR and network pages, and the storage list.
import { action, api, formatBytes } from './api.js'
import { useCollection } from './live.js'
import { html, ActionButton, Bar, ErrorBox, StateBadge, Table, Tags, link, useAsync } from './ui.js'
import { StatsCharts } from './charts.js'
import { TaskList } from './tasks.js'
import { DiskDownloads, DiskUpload } from './disks.js'

/** One object's whole record, read again when its live fields change. */
function useRecord(collection, id, live) {
  return useAsync(() => api(`${collection}/${encodeURIComponent(id)}`), [collection, id, JSON.stringify(live ?? null)])
}

const vmColumns = [
  ['VM', (vm) => html`<a href=${link('vms', vm.id)}>${vm.name_label}</a>`],
  ['State', (vm) => html`<${StateBadge} state=${vm.power_state} />`],
  ['Address', (vm) => vm.mainIpAddress ?? ''],
]

function Actions({ collection, resource, id, list }) {
  return html`<div class="actions">${list.map(
    ([name, privilege, label]) => html`<${ActionButton} privilege=${[resource, privilege, id]} confirm=${label + '?'} run=${() => action(collection, id, name)}>${label}<//>`,
  )}</div>`
}

export function HostPage({ id }) {
  const hosts = useCollection('hosts')
  const vms = useCollection('vms')
  const live = hosts.records.get(id)
  const record = useRecord('hosts', id, live)
  if (record.error !== undefined) return html`<${ErrorBox} error=${record.error} />`
  const host = { ...record.value, ...live }
  const resident = [...vms.records.values()].filter((vm) => vm.$container === id)
  return html`<div class="object-page">
    <h2>${host.name_label} <${StateBadge} state=${host.power_state} /></h2>
    <${Actions} collection="hosts" resource="host" id=${id} list=${[
      ['disable', 'disable', 'Disable'],
      ['enable', 'enable', 'Enable'],
      ['clean_reboot', 'reboot:clean', 'Reboot'],
      ['clean_shutdown', 'shutdown:clean', 'Shut down'],
      ['start', 'start', 'Start'],
    ]} />
    <dl class="summary">
      <dt>Address</dt><dd>${host.address}</dd>
      <dt>Version</dt><dd>${host.productBrand} ${host.version}</dd>
      <dt>Enabled</dt><dd>${String(host.enabled)}</dd>
      <dt>Memory</dt><dd>${formatBytes(host.memory?.usage)} / ${formatBytes(host.memory?.size)}</dd>
      <dt>Pool</dt><dd><a href=${link('pools', host.$pool)}>${host.$pool}</a></dd>
      <dt>Tags</dt><dd><${Tags} collection="hosts" resource="host" id=${id} tags=${host.tags} /></dd>
    </dl>
    <h3>VMs on this host</h3>
    <${Table} rows=${resident} columns=${vmColumns} empty="No VM runs here." />
    <h3>Statistics</h3>
    <${StatsCharts} collection="hosts" id=${id} />
    <h3>Tasks</h3>
    <${TaskList} objectId=${id} />
  </div>`
}

export function PoolPage({ id }) {
  const pools = useCollection('pools')
  const hosts = useCollection('hosts')
  const srs = useCollection('srs')
  const live = pools.records.get(id)
  const record = useRecord('pools', id, live)
  const dashboard = useAsync(() => api(`pools/${encodeURIComponent(id)}/dashboard`), [id])
  if (record.error !== undefined) return html`<${ErrorBox} error=${record.error} />`
  const pool = { ...record.value, ...live }
  return html`<div class="object-page">
    <h2>${pool.name_label}</h2>
    <p>${pool.name_description}</p>
    <${Actions} collection="pools" resource="pool" id=${id} list=${[
      ['rolling_reboot', 'rolling-reboot', 'Rolling reboot'],
      ['emergency_shutdown', 'emergency-shutdown', 'Emergency shutdown'],
    ]} />
    <dl class="summary"><dt>Tags</dt><dd><${Tags} collection="pools" resource="pool" id=${id} tags=${pool.tags} /></dd></dl>
    <h3>Hosts</h3>
    <${Table} rows=${[...hosts.records.values()].filter((host) => host.$pool === id)} columns=${[
      ['Host', (host) => html`<a href=${link('hosts', host.id)}>${host.name_label}</a>`],
      ['State', (host) => html`<${StateBadge} state=${host.power_state} />`],
      ['Address', (host) => host.address],
    ]} />
    <h3>Storage</h3>
    <${SrTable} rows=${[...srs.records.values()].filter((sr) => sr.$pool === id)} />
    <h3>Dashboard</h3>
    ${dashboard.error ? html`<${ErrorBox} error=${dashboard.error} />` : html`<pre class="json">${JSON.stringify(dashboard.value ?? {}, null, 2)}</pre>`}
    <h3>Statistics</h3>
    <${StatsCharts} collection="pools" id=${id} />
  </div>`
}

function SrTable({ rows }) {
  return html`<${Table} rows=${rows} columns=${[
    ['SR', (sr) => html`<a href=${link('srs', sr.id)}>${sr.name_label}</a>`],
    ['Type', (sr) => sr.SR_type],
    ['Usage', (sr) => html`<${Bar} used=${sr.physical_usage} total=${sr.size} label=${`${formatBytes(sr.physical_usage)} / ${formatBytes(sr.size)}`} />`],
  ]} />`
}

export function StoragePage() {
  const srs = useCollection('srs')
  const networks = useCollection('networks')
  return html`<div class="object-page">
    <h2>Storage repositories</h2>
    <${SrTable} rows=${[...srs.records.values()]} />
    <h2>Networks</h2>
    <${Table} rows=${[...networks.records.values()]} columns=${[
      ['Network', (network) => html`<a href=${link('networks', network.id)}>${network.name_label}</a>`],
      ['Bridge', (network) => network.bridge],
      ['MTU', (network) => network.MTU],
    ]} />
  </div>`
}

export function SrPage({ id }) {
  const srs = useCollection('srs')
  const vdis = useCollection('vdis')
  const live = srs.records.get(id)
  const record = useRecord('srs', id, live)
  if (record.error !== undefined) return html`<${ErrorBox} error=${record.error} />`
  const sr = { ...record.value, ...live }
  return html`<div class="object-page">
    <h2>${sr.name_label}</h2>
    <${Actions} collection="srs" resource="sr" id=${id} list=${[
      ['scan', 'scan', 'Scan'],
      ['reclaim_space', 'reclaim-space', 'Reclaim space'],
    ]} />
    <${Bar} used=${sr.physical_usage} total=${sr.size} label=${`${formatBytes(sr.physical_usage)} / ${formatBytes(sr.size)}`} />
    <dl class="summary"><dt>Type</dt><dd>${sr.SR_type}</dd><dt>Tags</dt><dd><${Tags} collection="srs" resource="sr" id=${id} tags=${sr.tags} /></dd></dl>
    <h3>Disks</h3>
    <${Table} rows=${[...vdis.records.values()].filter((vdi) => vdi.$SR === id)} columns=${[
      ['Disk', (vdi) => vdi.name_label],
      ['Size', (vdi) => formatBytes(vdi.size)],
      ['Used', (vdi) => formatBytes(vdi.usage)],
      ['Download', (vdi) => html`<${DiskDownloads} vdi=${vdi} />`],
      ['Upload', (vdi) => html`<${DiskUpload} vdi=${vdi} />`],
    ]} />
  </div>`
}

export function NetworkPage({ id }) {
  const networks = useCollection('networks')
  const live = networks.records.get(id)
  const record = useRecord('networks', id, live)
  if (record.error !== undefined) return html`<${ErrorBox} error=${record.error} />`
  const network = { ...record.value, ...live }
  return html`<div class="object-page">
    <h2>${network.name_label}</h2>
    <p>${network.name_description}</p>
    <dl class="summary">
      <dt>Bridge</dt><dd>${network.bridge}</dd><dt>MTU</dt><dd>${network.MTU}</dd>
      <dt>PIFs</dt><dd>${(network.PIFs ?? []).length}</dd><dt>VIFs</dt><dd>${(network.VIFs ?? []).length}</dd>
      <dt>Tags</dt><dd><${Tags} collection="networks" resource="network" id=${id} tags=${network.tags} /></dd>
    </dl>
  </div>`
}
