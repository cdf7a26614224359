// Backups: repositories, jobs (create, edit, run now), schedules, logs with their steps, archives, restore.
import { action, api, formatTime } from './api.js'
import { useState } from 'preact/hooks'
import { useCollection } from './live.js'
import { html, ActionButton, ErrorBox, JsonForm, Table, useAsync, useMay } from './ui.js'

function Steps({ tasks = [] }) {
  if (tasks.length === 0) return null
  return html`<ul class="steps">${tasks.map(
    (task) => html`<li><span class=${'state state-' + task.status}>${task.status}</span> ${task.message} ${task.data?.id ?? task.data?.type ?? ''} <${Steps} tasks=${task.tasks} /></li>`,
  )}</ul>`
}

function Restore({ archive }) {
  const srs = useCollection('srs')
  const [sr, setSr] = useState('')
  return html`<span><select value=${sr} onChange=${(event) => setSr(event.target.value)}>
      <option value="">SR…</option>${[...srs.records.values()].map((one) => html`<option value=${one.id}>${one.name_label}</option>`)}
    </select>
    <${ActionButton} privilege=${['backup-archive', 'restore']} run=${() => action('backup-archives', archive.id, 'restore', sr === '' ? {} : { sr })}>Restore<//></span>`
}


export function Backups() {
  const repositories = useAsync(() => api('backup-repositories?fields=*'), [])
  const jobs = useAsync(() => api('backup-jobs?fields=*'), [])
  const schedules = useAsync(() => api('schedules?fields=*'), [])
  const logs = useAsync(() => api('backup-logs?fields=*'), [])
  const archives = useAsync(() => api('backup-archives?backup-repository=*&fields=*'), [])
  const [editing, setEditing] = useState()
  const mayCreateJob = useMay('backup-job', 'create')
  const mayCreateRepository = useMay('backup-repository', 'create')
  const mayCreateSchedule = useMay('schedule', 'create')
  const firstRepository = repositories.value?.[0]?.id ?? '<repository id>'
  return html`<div class="backups">
    <h2>Backup repositories</h2>
    <${ErrorBox} error=${repositories.error} />
    <${Table} rows=${repositories.value ?? []} empty="No repository." columns=${[
      ['Name', (repository) => repository.name],
      ['URL', (repository) => repository.url],
      ['', (repository) => html`<${ActionButton} privilege=${['backup-repository', 'forget']} confirm="Forget this repository (its files stay)?" run=${() => action('backup-repositories', repository.id, 'forget')} onDone=${repositories.reload}>Forget<//>`],
    ]} />
    ${mayCreateRepository && html`<details><summary>New repository</summary><${JsonForm} label="Create" initial=${{ name: 'local', url: 'file:///var/lib/keel/backups' }} submit=${(body) => api('backup-repositories', { method: 'POST', body })} onDone=${repositories.reload} /></details>`}
    <h2>Jobs</h2>
    <${ErrorBox} error=${jobs.error} />
    <${Table} rows=${jobs.value ?? []} empty="No job." columns=${[
      ['Name', (job) => job.name],
      ['Mode', (job) => job.mode],
      ['', (job) => html`
        <${ActionButton} privilege=${['backup-job', 'run']} run=${() => action('backup-jobs', job.id, 'run')} onDone=${logs.reload}>Run now<//>
        <button class="link" onClick=${() => setEditing(job)}>Edit</button>
        <${ActionButton} privilege=${['backup-job', 'delete']} confirm="Delete this job?" run=${() => api(`backup-jobs/${job.id}`, { method: 'DELETE' })} onDone=${jobs.reload}>Delete<//>`],
    ]} />
    ${editing && html`<div class="editor"><h3>Edit ${editing.name}</h3><${JsonForm} key=${editing.id} label="Save" initial=${{ name: editing.name, mode: editing.mode, vms: editing.vms, remotes: editing.remotes, settings: editing.settings }}
      submit=${(body) => api(`backup-jobs/${editing.id}`, { method: 'PATCH', body })} onDone=${() => { setEditing(undefined); jobs.reload() }} /></div>`}
    ${mayCreateJob && html`<details><summary>New job</summary><${JsonForm} label="Create" initial=${{ name: 'nightly', mode: 'full', vms: { tags: { __or: [['prod']] } }, remotes: { id: firstRepository }, settings: { '': { exportRetention: 7 } } }}
      submit=${(body) => api('backup-jobs', { method: 'POST', body })} onDone=${jobs.reload} /></details>`}
    <h2>Schedules</h2>
    <${ErrorBox} error=${schedules.error} />
    <${Table} rows=${schedules.value ?? []} empty="No schedule." columns=${[
      ['Name', (schedule) => schedule.name ?? schedule.id],
      ['Cron', (schedule) => `${schedule.cron} ${schedule.timezone ?? ''}`],
      ['Enabled', (schedule) => String(schedule.enabled)],
      ['', (schedule) => html`<${ActionButton} privilege=${['schedule', 'run']} run=${() => action('schedules', schedule.id, 'run')}>Run<//>
        <${ActionButton} privilege=${['schedule', 'delete']} confirm="Delete this schedule?" run=${() => api(`schedules/${schedule.id}`, { method: 'DELETE' })} onDone=${schedules.reload}>Delete<//>`],
    ]} />
    ${mayCreateSchedule && html`<details><summary>New schedule</summary><${JsonForm} label="Create" initial=${{ jobId: jobs.value?.[0]?.id ?? '<job id>', cron: '0 2 * * *', enabled: true }} submit=${(body) => api('schedules', { method: 'POST', body })} onDone=${schedules.reload} /></details>`}
    <h2>Logs</h2>
    <${ErrorBox} error=${logs.error} />
    <${Table} rows=${[...(logs.value ?? [])].reverse().slice(0, 50)} empty="No backup ran yet." columns=${[
      ['Job', (log) => log.jobName],
      ['Status', (log) => html`<span class=${'state state-' + log.status}>${log.status}</span>`],
      ['Started', (log) => formatTime(log.start)],
      ['Steps', (log) => html`<details><summary>${(log.tasks ?? []).length} VMs</summary><${Steps} tasks=${log.tasks} /></details>`],
    ]} />
    <h2>Archives</h2>
    <${ErrorBox} error=${archives.error} />
    <${Table} rows=${archives.value ?? []} empty="No archive." columns=${[
      ['VM', (archive) => archive.vm?.name_label ?? archive.vmId ?? ''],
      ['Mode', (archive) => archive.mode],
      ['Taken', (archive) => formatTime(archive.timestamp)],
      ['', (archive) => html`<${Restore} archive=${archive} />`],
    ]} />
  </div>`
}
