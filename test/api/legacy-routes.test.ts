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

t.test('the reference\'s older backup paths', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const folder = join(server.dataDir, 'backups', 'legacy')
  mkdirSync(folder)
  const repository = await created(server, '/rest/v0/backup-repositories', { name: 'legacy', url: `file://${folder}` })
  const job = await created(server, '/rest/v0/backup-jobs', { name: 'legacy', mode: 'full', vms: { id: demo.localHaltedVm }, remotes: { id: repository }, settings: { '': { exportRetention: 1 } } })
  t.equal((await server.request(`/rest/v0/backup-jobs/${job}/actions/run?sync=true`, { method: 'POST' })).status, 204)
  const [archive] = (await server.json<Array<{ id: string }>>(`/rest/v0/backup-archives?backup-repository=${repository}&fields=id`)).body
  const restored = await server.json(`/rest/v0/backup-archives/${encodeURIComponent(archive?.id ?? '')}/actions/restore?sync=true`, jsonBody({ sr: demo.defaultSr }))
  t.equal(restored.status, 201)

  t.test('VM backup jobs, listed and read as backup-jobs are', async (t) => {
    t.same((await server.json('/rest/v0/backup/jobs/vm')).body, (await server.json('/rest/v0/backup-jobs')).body)
    t.same((await server.json('/rest/v0/backup/jobs/vm?fields=name,mode')).body, [{ name: 'legacy', mode: 'full', href: `/rest/v0/backup-jobs/${job}` }])
    t.same(await ndjsonValues(await server.request('/rest/v0/backup/jobs/vm?ndjson=true')), [`/rest/v0/backup-jobs/${job}`])
    t.same((await server.json(`/rest/v0/backup/jobs/vm/${job}`)).body, (await server.json(`/rest/v0/backup-jobs/${job}`)).body)
    t.same((await server.json('/rest/v0/backup/jobs/vm?filter=mode:delta')).body, [])
  })

  t.test('metadata and mirror jobs: Keel has none', async (t) => {
    for (const kind of ['metadata', 'mirror']) {
      t.same((await server.json(`/rest/v0/backup/jobs/${kind}`)).body, [])
      const other = await server.json<{ code: string }>(`/rest/v0/backup/jobs/${kind}/${job}`)
      t.equal(other.status, 404, `a VM job is no ${kind} job`)
      t.equal(other.body.code, 'NO_SUCH_OBJECT')
    }
  })

  t.test('backup/jobs/<id> answers 308 to the VM job\'s path', async (t) => {
    const response = await server.request(`/rest/v0/backup/jobs/${job}`)
    t.equal(response.status, 308)
    t.equal(response.headers.get('location'), `/rest/v0/backup/jobs/vm/${job}`)
  })

  t.test('backup and restore logs', async (t) => {
    const backupLogs = (await server.json<string[]>('/rest/v0/backup-logs')).body
    t.ok(backupLogs.length > 0)
    t.same((await server.json('/rest/v0/backup/logs')).body, backupLogs)
    const logId = backupLogs[0]?.split('/').pop() ?? ''
    t.same((await server.json(`/rest/v0/backup/logs/${logId}`)).body, (await server.json(`/rest/v0/backup-logs/${logId}`)).body)
    t.same((await server.json<Obj[]>('/rest/v0/backup/logs?fields=status&filter=status:success')).body.map((log) => log['status']), ['success'])
    const restoreLogs = (await server.json<string[]>('/rest/v0/restore-logs')).body
    t.equal(restoreLogs.length, 1)
    t.same((await server.json('/rest/v0/restore/logs')).body, restoreLogs)
    const restoreId = restoreLogs[0]?.split('/').pop() ?? ''
    t.match((await server.json(`/rest/v0/restore/logs/${restoreId}`)).body, { type: 'restore-log', status: 'success' })
  })

  t.test('refusals', async (t) => {
    t.equal((await server.json('/rest/v0/backup/jobs/vm/nope')).status, 404)
    t.equal((await server.json('/rest/v0/backup/logs/nope')).status, 404)
    t.equal((await server.json('/rest/v0/restore/logs/nope')).status, 404)
    const badLimit = await server.json<{ data: Obj }>('/rest/v0/backup/logs?limit=x')
    t.equal(badLimit.status, 400)
    t.equal(badLimit.body.data['parameter'], 'limit')
    const user = await scopedUser(server, 'legacy@example.net', [])
    t.same((await server.json('/rest/v0/backup/jobs/vm', { auth: user.auth })).body, [], 'a listing shows what the caller may read')
    t.equal((await server.json(`/rest/v0/backup/jobs/vm/${job}`, { auth: user.auth })).status, 403)
    t.equal((await server.request(`/rest/v0/backup/jobs/${job}`, { auth: null })).status, 401)
  })
})

t.test('DELETE /rest/v0/tasks: the finished tasks the caller may delete', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const start = await server.json<{ taskId: string }>(`/rest/v0/vms/${demo.haltedVm}/actions/start`, { method: 'POST' })
  await server.json(`/rest/v0/tasks/${start.body.taskId}?wait=true`)
  await server.json(`/rest/v0/vms/${demo.haltedVm}/actions/hard_shutdown?sync=true`, { method: 'POST' })
  const before = (await server.json<string[]>('/rest/v0/tasks')).body
  t.ok(before.length >= 2)

  const user = await scopedUser(server, 'tasks@example.net', [{ resource: 'task', action: 'read' }])
  const refused = await server.json<{ code: string }>('/rest/v0/tasks', { method: 'DELETE', auth: user.auth })
  t.equal(refused.status, 403)
  t.equal(refused.body.code, 'NOT_ENOUGH_PRIVILEGES')
  t.same((await server.json('/rest/v0/tasks')).body, before, 'nothing deleted')

  const scoped = await scopedUser(server, 'task-deleter@example.net', [{ resource: 'task', action: 'delete', selector: `id:${start.body.taskId}` }])
  t.equal((await server.request('/rest/v0/tasks', { method: 'DELETE', auth: scoped.auth })).status, 204)
  const after = (await server.json<string[]>('/rest/v0/tasks')).body
  t.same(after, before.filter((href) => href !== `/rest/v0/tasks/${start.body.taskId}`), 'only the task the selector allows')

  t.equal((await server.request('/rest/v0/tasks', { method: 'DELETE' })).status, 204)
  t.same((await server.json('/rest/v0/tasks')).body, [], 'an administrator deletes every finished task')
})

t.test('POST /rest/v0/users/authentication_tokens: a token for the caller', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const user = await scopedUser(server, 'token-maker@example.net', [])
  const made = await server.json<{ token: { id: string; user_id: string; description: string; expiration: number } }>('/rest/v0/users/authentication_tokens', {
    ...jsonBody({ description: 'cli', expiresIn: '1 hour' }),
    headers: { 'content-type': 'application/json', authorization: user.auth },
  })
  t.equal(made.status, 201)
  t.match(made.body.token, { user_id: user.id, description: 'cli', expiration: server.clock.now + 3_600_000 })
  t.equal((await server.request(`/rest/v0/users/${user.id}`, { headers: { authorization: `Bearer ${made.body.token.id}` } })).status, 200)
  const listed = (await server.json<unknown[]>(`/rest/v0/users/${user.id}/authentication_tokens`, { auth: user.auth })).body
  t.equal(listed.length, 1)

  const bad = await server.json<{ code: string; data: { errors: Obj[] } }>('/rest/v0/users/authentication_tokens', jsonBody({ expiresIn: 'soon' }))
  t.equal(bad.status, 422)
  t.match(bad.body.data.errors, [{ path: 'body.expiresIn' }])
  t.equal((await server.json('/rest/v0/users/authentication_tokens', { ...jsonBody({}), auth: null })).status, 401)
  t.equal((await server.json<unknown[]>(`/rest/v0/users/${user.id}/authentication_tokens`, { auth: user.auth })).body.length, 1, 'no token made by the refusals')
})
