// Pools, hosts and VMs by state, storage use, running tasks, alarms and the last day's backups, live.
import { api, formatBytes, formatTime } from './api.js'
import { useCollection } from './live.js'
import { html, Bar, ErrorBox, link, Table, useAsync } from './ui.js'

const countBy = (records, key) => {
  const counts = {}
  for (const record of records.values()) counts[record[key]] = (counts[record[key]] ?? 0) + 1
  return counts
}

function Counts({ title, counts, total, id }) {
  return html`<section class="card" id=${id}>
    <h3>${title} <span class="count">${total}</span></h3>
    <ul class="counts">${Object.entries(counts).map(([state, n]) => html`<li><span class=${'state state-' + state.toLowerCase()}>${state}</span> ${n}</li>`)}</ul>
  </section>`
}

export function Overview() {
  const pools = useCollection('pools')
  const hosts = useCollection('hosts')
  const vms = useCollection('vms')
  const srs = useCollection('srs')
  const tasks = useCollection('tasks')
  const alarms = useCollection('alarms')
  const since = Date.now() - 86_400_000
  const backups = useAsync(() => api(`backup-logs?fields=id,jobName,status,start,end&filter=${encodeURIComponent(`start:>${since}`)}`), [])
  const running = [...tasks.records.values()].filter((task) => task.status === 'pending')
  return html`<div class="overview">
    <h2>Overview</h2>
    <div class="cards">
      <${Counts} title="Pools" id="count-pools" counts=${{}} total=${pools.records.size} />
      <${Counts} title="Hosts" id="count-hosts" counts=${countBy(hosts.records, 'power_state')} total=${hosts.records.size} />
      <${Counts} title="VMs" id="count-vms" counts=${countBy(vms.records, 'power_state')} total=${vms.records.size} />
    </div>
    <section class="card wide">
      <h3>Storage</h3>
      ${[...srs.records.values()]
        .filter((sr) => sr.size > 0)
        .map((sr) => html`<div class="sr-usage"><a href=${link('srs', sr.id)}>${sr.name_label}</a><${Bar} used=${sr.physical_usage} total=${sr.size} label=${`${formatBytes(sr.physical_usage)} / ${formatBytes(sr.size)}`} /></div>`)}
    </section>
    <div class="cards">
      <section class="card">
        <h3>Running tasks <span class="count">${running.length}</span></h3>
        <ul>${running.slice(0, 10).map((task) => html`<li>${task.properties?.name} ${task.properties?.progress ?? 0}%</li>`)}</ul>
      </section>
      <section class="card">
        <h3>Alarms <span class="count">${alarms.records.size}</span></h3>
        <ul>${[...alarms.records.values()].slice(0, 10).map((alarm) => html`<li>${alarm.body?.name} ${alarm.body?.value} on ${alarm.object?.type} <small>${formatTime(alarm.time)}</small></li>`)}</ul>
      </section>
      <section class="card">
        <h3>Backups of the last day</h3>
        <${ErrorBox} error=${backups.error} />
        <${Table} rows=${backups.value ?? []} empty="No backup ran in the last day." columns=${[
          ['Job', (log) => log.jobName ?? log.id],
          ['Status', (log) => log.status],
          ['Started', (log) => formatTime(log.start)],
        ]} />
      </section>
    </div>
  </div>`
}
