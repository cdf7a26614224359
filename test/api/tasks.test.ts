import t from 'tap'
import { rmSync } from 'node:fs'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const start = async (server: TestServer, path: string, body?: unknown): Promise<string> => {
  const response = await server.json<Obj>(path, body === undefined ? { method: 'POST' } : jsonBody(body))
  if (response.status !== 202) throw new Error(`${path}: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body['taskId'] as string
}

t.test('tasks: wait, timeout, abort, delete, listing', async (t) => {
  // Slow steps, so that a rolling reboot is still running while we poke at it.
  const server = await startServer({ config: { lab: { stepDelay: 150 } } })
  const demo = await demoIds(server)
  t.teardown(() => server.close())

  t.test('wait with a timeout answers with the pending record', async (t) => {
    const id = await start(server, `/rest/v0/pools/${demo.pool}/actions/rolling_reboot`)
    const pending = await server.json<Obj>(`/rest/v0/tasks/${id}?wait=true&timeout=20`)
    t.equal(pending.status, 200)
    t.equal(pending.body['status'], 'pending')
    t.same(Object.keys(pending.body).sort(), ['id', 'properties', 'start', 'status', 'type', 'updatedAt'].sort())

    t.test('abort: the task ends as a failure with an abort error', async (t) => {
      const abort = await server.request(`/rest/v0/tasks/${id}/actions/abort?sync=true`, { method: 'POST' })
      t.equal(abort.status, 204)
      const final = (await server.json<Obj>(`/rest/v0/tasks/${id}?wait=true`)).body
      t.equal(final['status'], 'failure')
      t.match(final['result'], { code: 'ABORTED', name: 'KeelError' })
      t.type(final['abortionRequestedAt'], 'number')
      const again = await server.json<Obj>(`/rest/v0/tasks/${id}/actions/abort?sync=true`, { method: 'POST' })
      t.equal(again.status, 409)
      t.match(again.body, { code: 'INCORRECT_STATE', data: { actual: 'failure', expected: 'pending' } })
    })
  })

  t.test('async abort is an action with its own task', async (t) => {
    const id = await start(server, `/rest/v0/pools/${demo.pool}/actions/rolling_reboot`)
    const abortTask = await start(server, `/rest/v0/tasks/${id}/actions/abort`)
    t.not(abortTask, id)
    t.equal((await server.json<Obj>(`/rest/v0/tasks/${abortTask}?wait=true`)).body['status'], 'success')
    t.equal((await server.json<Obj>(`/rest/v0/tasks/${id}?wait=true`)).body['status'], 'failure')
  })

  t.test('DELETE: 409 while pending, 204 once finished, then 404', async (t) => {
    const id = await start(server, `/rest/v0/vms/${demo.haltedVm}/actions/start`)
    const early = await server.json(`/rest/v0/tasks/${id}`, { method: 'DELETE' })
    t.equal(early.status, 409)
    t.match(early.body, { code: 'INCORRECT_STATE', data: { actual: 'pending' } })
    await server.json(`/rest/v0/tasks/${id}?wait=true`)
    t.equal((await server.request(`/rest/v0/tasks/${id}`, { method: 'DELETE' })).status, 204)
    const gone = await server.json(`/rest/v0/tasks/${id}`)
    t.same(gone.body, { error: `no such task ${id}`, code: 'NO_SUCH_OBJECT', data: { id, type: 'task' } })
    t.equal((await server.json('/rest/v0/tasks/nope?wait=true')).status, 404)
  })

  t.test('the collection parameters work on tasks', async (t) => {
    const all = (await server.json<string[]>('/rest/v0/tasks')).body
    t.ok(all.length >= 3)
    for (const href of all) t.match(href, /^\/rest\/v0\/tasks\//)
    const sorted = [...all].sort()
    t.same(all, sorted, 'ids are time-sortable and listed oldest first')
    const failures = (await server.json<Obj[]>('/rest/v0/tasks?fields=status,properties.name&filter=status:failure')).body
    t.ok(failures.length >= 2)
    for (const task of failures) t.equal(task['status'], 'failure')
  })
})

t.test('bad query values are 400 naming the parameter, and start nothing', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())
  const before = (await server.json<string[]>('/rest/v0/tasks')).body.length
  const sync = await server.json<Obj>(`/rest/v0/srs/${demo.defaultSr}/actions/scan?sync=maybe`, { method: 'POST' })
  t.equal(sync.status, 400)
  t.match(sync.body, { code: 'BAD_QUERY_PARAMETER', data: { parameter: 'sync' } })
  t.equal((await server.json<string[]>('/rest/v0/tasks')).body.length, before)
  const id = await start(server, `/rest/v0/srs/${demo.defaultSr}/actions/scan`)
  const bad: Array<[string, string]> = [['wait=later', 'wait'], ['wait=true&timeout=-5', 'timeout'], ['wait=true&timeout=soon', 'timeout']]
  for (const [query, parameter] of bad) {
    const { status, body } = await server.json<Obj>(`/rest/v0/tasks/${id}?${query}`)
    t.equal(status, 400, query)
    t.match(body, { code: 'BAD_QUERY_PARAMETER', data: { parameter } })
  }
})

t.test('a task left pending by a stop is interrupted after the restart', async (t) => {
  const first = await startServer({ config: { lab: { stepDelay: 1000 } } })
  const demo = await demoIds(first)
  const id = await start(first, `/rest/v0/pools/${demo.pool}/actions/rolling_reboot`)
  await first.close({ keepData: true })
  const second = await startServer({ dataDir: first.dataDir, clock: first.clock })
  t.teardown(async () => {
    await second.close()
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const task = (await second.json<Obj>(`/rest/v0/tasks/${id}?wait=true`)).body
  t.equal(task['status'], 'interrupted')
  t.type(task['end'], 'number')
})

t.test('old finished tasks are pruned to the configured count', async (t) => {
  const server = await startServer({ config: { tasks: { keep: 3 } } })
  const demo = await demoIds(server)
  t.teardown(() => server.close())
  for (let i = 0; i < 5; i++) {
    await server.json(`/rest/v0/srs/${demo.defaultSr}/actions/scan?sync=true`, { method: 'POST' })
  }
  t.equal((await server.json<string[]>('/rest/v0/tasks')).body.length, 3)
})
