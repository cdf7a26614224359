import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedUser } from '../helpers/scoped-user.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { ndjsonValues } from '../helpers/streams.js'

type Obj = Record<string, unknown>

async function created(server: TestServer, path: string, body: unknown): Promise<string> {
  const response = await server.json<{ id: string }>(path, jsonBody(body))
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body.id
}

t.test('the site dashboard', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)

  t.test('counts, states and sizes of the demo lab', async (t) => {
    const { status, body } = await server.json<Obj>('/rest/v0/dashboard')
    t.equal(status, 200)
    t.same(Object.keys(body), ['nPools', 'nHosts', 'hostsStatus', 'resourcesOverview', 'vmsStatus', 'storageRepositories', 'poolsStatus', 'missingPatches', 'backupRepositories', 'backups'])
    t.equal(body['nPools'], 1)
    t.equal(body['nHosts'], 3)
    t.same(body['hostsStatus'], { disabled: 0, running: 3, halted: 0, unknown: 0, total: 3 })
    t.same(body['vmsStatus'], { active: 8, inactive: 4, running: 7, halted: 3, paused: 1, suspended: 1, unknown: 0, total: 12 })
    t.same(body['poolsStatus'], { connected: 1, disconnected: 0, unreachable: 0, unknown: 0, total: 1 })
    t.same(body['missingPatches'], { hasAuthorization: true, nHosts: 3, nHostsEol: { isEmpty: true }, nHostsWithMissingPatches: 3, nHostsFailed: 0, nPools: 1, nPoolsWithMissingPatches: 1 })
    const hosts = (await server.json<Array<{ memory: { size: number } }>>('/rest/v0/hosts?fields=memory')).body
    const srs = (await server.json<Array<{ size: number; physical_usage: number; content_type: string }>>('/rest/v0/srs?fields=size,physical_usage,content_type')).body.filter((sr) => sr.size > 0 && sr.content_type !== 'iso')
    const total = srs.reduce((sum, sr) => sum + sr.size, 0)
    const used = srs.reduce((sum, sr) => sum + sr.physical_usage, 0)
    t.same(body['resourcesOverview'], { nCpus: 80, memorySize: hosts.reduce((sum, host) => sum + host.memory.size, 0), srSize: total })
    t.same(body['storageRepositories'], { size: { available: total - used, other: used, replicated: 0, total, used } })
    t.same(body['backupRepositories'], { isEmpty: true })
    t.same(body['backups'], { isEmpty: true })
  })

  t.test('the NDJSON form: one line per section', async (t) => {
    const whole = (await server.json<Obj>('/rest/v0/dashboard')).body
    const response = await server.request('/rest/v0/dashboard?ndjson=true')
    t.match(response.headers.get('content-type'), /application\/x-ndjson/)
    const lines = await ndjsonValues<Obj>(response)
    t.same(lines, Object.entries(whole).map(([key, value]) => ({ [key]: value })))
  })

  t.test('a user sees the counts of what they may read', async (t) => {
    const user = await scopedUser(server, 'dashboard@example.net', [{ resource: 'vm', action: 'read', selector: 'tags:prod' }])
    const { status, body } = await server.json<Obj>('/rest/v0/dashboard', { auth: user.auth })
    t.equal(status, 200)
    const prod = (await server.json<Array<{ power_state: string }>>('/rest/v0/vms?fields=power_state&filter=tags:prod')).body
    t.equal((body['vmsStatus'] as Obj)['total'], prod.length)
    t.equal(body['nPools'], 0)
    t.equal(body['nHosts'], 0)
    t.same(body['storageRepositories'], { isEmpty: true })
    t.equal((await server.request('/rest/v0/dashboard', { auth: null })).status, 401)
  })

  t.test('backups: jobs by outcome, protected VMs; the VM dashboard tells its runs and archives', async (t) => {
    const folder = join(server.dataDir, 'backups', 'dashboard')
    mkdirSync(folder)
    const repository = await created(server, '/rest/v0/backup-repositories', { name: 'dashboard', url: `file://${folder}` })
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'nightly', mode: 'full', vms: { id: demo.localHaltedVm }, remotes: { id: repository }, settings: { '': { exportRetention: 1 } } })
    const disabled = (await server.json<{ backups: Obj }>('/rest/v0/dashboard')).body.backups
    t.match(disabled, { jobs: { disabled: 1, total: 1 }, vmsProtection: { protected: 0, unprotected: 1 } }, 'no enabled schedule')
    await created(server, '/rest/v0/schedules', { jobId: job, cron: '0 3 * * *', enabled: true })
    const run = await server.request(`/rest/v0/backup-jobs/${job}/actions/run?sync=true`, { method: 'POST' })
    t.equal(run.status, 204)
    const dashboard = (await server.json<Obj>('/rest/v0/dashboard')).body
    t.match(dashboard['backups'], { jobs: { disabled: 0, failed: 0, noRecentRun: 0, skipped: 0, successful: 1, total: 1 }, issues: [], vmsProtection: { protected: 1, unprotected: 0, notInJob: 11 } })
    const size = (dashboard['backupRepositories'] as { other: { size: Record<string, number> } }).other.size
    t.ok((size['backups'] ?? 0) > 0 && (size['total'] ?? 0) > 0, 'archive bytes and the folder\'s file system')
    server.clock.advance(8 * 86_400_000)
    const weekLater = (await server.json<{ backups: Obj }>('/rest/v0/dashboard')).body.backups
    t.match(weekLater, { jobs: { noRecentRun: 1, successful: 0, total: 1 } }, 'a week on, with nothing changed, the run is no longer recent')
    server.clock.advance(-8 * 86_400_000)

    const vmDashboard = (await server.json<{ backupsInfo: Obj }>(`/rest/v0/vms/${demo.localHaltedVm}/dashboard`)).body
    t.equal(vmDashboard.backupsInfo['vmProtection'], 'protected')
    t.match(vmDashboard.backupsInfo['lastRuns'], [{ backupJobId: job, status: 'success' }])
    t.match(vmDashboard.backupsInfo['backupArchives'], [{ backupRepository: repository }])
    const other = (await server.json<{ backupsInfo: Obj }>(`/rest/v0/vms/${demo.runningVm}/dashboard`)).body
    t.same(other.backupsInfo, { lastRuns: [], vmProtection: 'not-in-active-job', replication: {}, backupArchives: [] })
  })
})

t.test('the VM dashboard', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/vms/${demo.runningVm}/dashboard`

  t.test('quick information and alarms', async (t) => {
    const vm = (await server.json<Obj>(`/rest/v0/vms/${demo.runningVm}`)).body
    const { status, body } = await server.json<{ quickInfo: Obj; alarms: string[]; backupsInfo: Obj }>(path)
    t.equal(status, 200)
    t.match(body.quickInfo, { id: demo.runningVm, power_state: 'Running', uuid: vm['uuid'], CPUs: { number: 2 }, host: vm['$container'], $pool: demo.pool, pvDriversDetected: true })
    t.same(body.alarms, [])
    const alarmed = (await server.json<Array<{ id: string; object: { uuid: string } }>>('/rest/v0/alarms?fields=id,object')).body.find((alarm) => alarm.object.uuid.length > 0)
    const withAlarm = (await server.json<{ alarms: string[] }>(`/rest/v0/vms/${alarmed?.object.uuid}/dashboard`)).body
    t.same(withAlarm.alarms, [alarmed?.id])
    const halted = (await server.json<{ quickInfo: Obj }>(`/rest/v0/vms/${demo.haltedVm}/dashboard`)).body
    t.notOk('host' in halted.quickInfo, 'a halted VM runs on no host')
  })

  t.test('the NDJSON form, nested under each section\'s path', async (t) => {
    const whole = (await server.json<{ quickInfo: Obj; alarms: string[]; backupsInfo: Obj }>(path)).body
    const lines = await ndjsonValues<Obj>(await server.request(`${path}?ndjson=true`))
    t.same(lines, [
      { quickInfo: whole.quickInfo },
      { alarms: whole.alarms },
      { backupsInfo: { replication: {} } },
      { backupsInfo: { lastRuns: [], vmProtection: 'not-in-active-job' } },
      { backupsInfo: { backupArchives: [] } },
    ])
  })

  t.test('refusals', async (t) => {
    t.equal((await server.json('/rest/v0/vms/nope/dashboard')).status, 404)
    t.equal((await server.json(`/rest/v0/vms/${demo.master}/dashboard`)).status, 404)
    t.equal((await server.json<{ data: Obj }>(`${path}?ndjson=maybe`)).status, 400)
    const user = await scopedUser(server, 'vm-dashboard@example.net', [{ resource: 'vm', action: 'read', selector: 'tags:nothing-has-this' }])
    const refused = await server.json<{ code: string }>(path, { auth: user.auth })
    t.equal(refused.status, 403)
    t.equal(refused.body.code, 'NOT_ENOUGH_PRIVILEGES')
  })
})
