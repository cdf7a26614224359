import t from 'tap'
import { EventEmitter, once } from 'node:events'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { demoIds } from '../helpers/demo-lab.js'
import { openLines } from '../helpers/streams.js'

type Obj = Record<string, unknown>
const admin = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }
const watch = (server: TestServer, path: string) => openLines(server.url + path, admin)
const rename = (server: TestServer, vm: string, name: string) =>
  server.request(`/rest/v0/vms/${vm}`, jsonBody({ nameLabel: name }, 'PATCH'))

t.test('watch', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())

  t.test('watch=true without ndjson=true is 400, and so is a bad since', async (t) => {
    for (const query of ['watch=true', 'watch=true&ndjson=false', 'ndjson=true&watch=true&since=yesterday']) {
      const response = await server.json<Obj>(`/rest/v0/vms?${query}`)
      t.equal(response.status, 400, query)
      t.equal(response.body['code'], 'BAD_QUERY_PARAMETER')
    }
  })

  t.test('lines for every event type, hrefs without fields', async (t) => {
    const lines = await watch(server, '/rest/v0/users?ndjson=true&watch=true')
    t.teardown(() => lines.close())
    t.equal(lines.response.headers['content-type'], 'application/x-ndjson')
    const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'watched@x.net', password: 'watched-password' }))
    await server.request(`/rest/v0/users/${created.body.id}`, jsonBody({ name: 'renamed' }, 'PATCH'))
    await server.request(`/rest/v0/users/${created.body.id}`, { method: 'DELETE' })
    const href = `/rest/v0/users/${created.body.id}`
    t.same(await lines.until(3), [['update', href], ['update', href], ['remove', href]])
  })

  t.test('with fields: picked object plus href; remove has only identifying properties', async (t) => {
    const plain = await watch(server, '/rest/v0/users?ndjson=true&watch=true&fields=email,name')
    const withId = await watch(server, '/rest/v0/users?ndjson=true&watch=true&fields=id,email')
    t.teardown(() => {
      plain.close()
      withId.close()
    })
    const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'picked@x.net', password: 'picked-password', name: 'n' }))
    await server.request(`/rest/v0/users/${created.body.id}`, { method: 'DELETE' })
    const href = `/rest/v0/users/${created.body.id}`
    t.same(await plain.until(2), [['update', { email: 'picked@x.net', name: 'n', href }], ['remove', { href }]])
    t.same(await withId.until(2), [['update', { id: created.body.id, email: 'picked@x.net', href }], ['remove', { id: created.body.id, href }]])
  })

  t.test('filter: entering gives update, leaving gives remove, never matching gives nothing', async (t) => {
    const lines = await watch(server, '/rest/v0/vms?ndjson=true&watch=true&fields=name_label&filter=name_label:watched-in')
    t.teardown(() => lines.close())
    const href = `/rest/v0/vms/${demo.haltedVm}`
    await rename(server, demo.runningVm, 'never-matches')
    await rename(server, demo.haltedVm, 'watched-in')
    await rename(server, demo.haltedVm, 'watched-out')
    await rename(server, demo.haltedVm, 'still-out')
    await rename(server, demo.haltedVm, 'watched-in')
    t.same(
      await lines.until(3),
      [['update', { name_label: 'watched-in', href }], ['remove', { href }], ['update', { name_label: 'watched-in', href }]],
      'changes outside the filter are not mentioned before the next one inside it',
    )
  })

  t.test('tasks can be watched', async (t) => {
    const lines = await watch(server, '/rest/v0/tasks?ndjson=true&watch=true&fields=status')
    t.teardown(() => lines.close())
    const started = await server.json<Obj>(`/rest/v0/vms/${demo.haltedVm}/actions/start`, { method: 'POST' })
    t.equal(started.status, 202)
    const href = `/rest/v0/tasks/${String(started.body['taskId'])}`
    await server.json(`${href}?wait=true`)
    let values = (await lines.until(1)) as Array<[string, Obj]>
    while (values.at(-1)?.[1]['status'] === 'pending') values = (await lines.until(values.length + 1)) as Array<[string, Obj]>
    t.same(values[0], ['update', { status: 'pending', href }], 'a new task is an update')
    t.same(values.at(-1), ['update', { status: 'success', href }], 'so is its end')
  })

  t.test('resume with since: numbered lines, missed changes, resync when no longer held', async (t) => {
    const first = await watch(server, '/rest/v0/vms?ndjson=true&watch=true&fields=name_label&since=now')
    await rename(server, demo.haltedVm, 'numbered')
    const [line] = (await first.until(1)) as Array<[string, Obj, number]>
    t.equal(line?.[1]['name_label'], 'numbered')
    t.type(line?.[2], 'number')
    first.close()
    await rename(server, demo.haltedVm, 'missed')
    const again = await watch(server, `/rest/v0/vms?ndjson=true&watch=true&fields=name_label&since=${line?.[2]}`)
    t.teardown(() => again.close())
    const [missed] = (await again.until(1)) as Array<[string, Obj, number]>
    t.same(missed?.slice(0, 2), ['update', { name_label: 'missed', href: `/rest/v0/vms/${demo.haltedVm}` }])
    t.ok((missed?.[2] as number) > (line?.[2] as number))
    const stale = await watch(server, '/rest/v0/vms?ndjson=true&watch=true&since=5')
    t.teardown(() => stale.close())
    const [resync] = (await stale.until(1)) as Array<[string, null, number]>
    t.same(resync?.slice(0, 2), ['resync', null])
  })
})

t.test('the documented recipe (watch, then list, then apply) loses nothing under concurrent changes', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())
  const query = 'fields=name_label,power_state&filter=name_label:/^r/'
  const vms = (await server.json<Array<{ id: string }>>('/rest/v0/vms?fields=id')).body.map((vm) => vm.id)
  let round = 0
  let running = true
  // Each round's renames are sent together; the next round starts once they are answered.
  const rounds = new EventEmitter()
  const churn = (async () => {
    while (running) {
      round++
      await Promise.all(vms.map((vm, index) => rename(server, vm, (round + index) % 3 === 0 ? `other-${round}` : `r-${round}-${index}`)))
      rounds.emit('done')
    }
  })()
  const roundsLater = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) await once(rounds, 'done')
  }
  await roundsLater(1)

  const lines = await watch(server, `/rest/v0/vms?ndjson=true&watch=true&${query}`)
  t.teardown(() => lines.close())
  const listing = (await server.json<Array<Obj & { href: string }>>(`/rest/v0/vms?${query}`)).body
  await roundsLater(2)
  running = false
  await churn
  const marker = vms[0] as string
  await rename(server, marker, 'r-final-marker')
  while (!JSON.stringify(lines.values.at(-1)).includes('r-final-marker')) await lines.until(lines.values.length + 1)

  const copy = new Map<string, Obj>(listing.map((vm) => [vm.href, vm]))
  for (const value of lines.values) {
    const [event, object] = value as [string, Obj & { href: string }]
    if (event === 'update') copy.set(object.href, object)
    else copy.delete(object.href)
  }
  const final = (await server.json<Array<Obj & { href: string }>>(`/rest/v0/vms?${query}`)).body
  t.ok(round > 1, `changes ran concurrently (${round} rounds)`)
  t.ok(lines.values.length > 0)
  t.same(new Map([...copy.entries()].sort()), new Map(final.map((vm) => [vm.href, vm] as [string, Obj]).sort()))
})

t.test('HEAD on a watch answers headers and ends', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const response = await server.request('/rest/v0/vms?ndjson=true&watch=true', { method: 'HEAD' })
  t.equal(response.status, 200)
  t.equal(response.headers.get('content-type'), 'application/x-ndjson')
  t.equal(await response.text(), '')
})
