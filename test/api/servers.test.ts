import t from 'tap'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { FakePools, ManualScheduler } from '../helpers/fake-pools.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { openLines } from '../helpers/streams.js'

type Obj = Record<string, unknown>

const POOL = { poolId: 'pool-1', poolNameLabel: 'Production', master: 'host-1', username: 'root', password: 'pool-secret-1', fingerprint: 'AA:BB:CC' }

/** Polls the entry until it shows the status: a wait for a positive event, bounded by the test's timeout. */
async function statusOf(server: TestServer, id: string, status: string): Promise<Obj> {
  for (;;) {
    const { body } = await server.json<Obj>(`/rest/v0/servers/${id}`)
    if (body['status'] === status) return body
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

async function ids(server: TestServer): Promise<string[]> {
  return (await server.json<string[]>('/rest/v0/servers')).body
}

t.test('servers over HTTP, against fake pools', async (t) => {
  const pools = new FakePools()
  const scheduler = new ManualScheduler()
  pools.add('pool.example', { ...POOL })
  const server = await startServer({ app: { poolConnector: pools, reconnectScheduler: scheduler } })
  t.teardown(() => server.close())
  const add = async (body: Obj): Promise<string> => {
    const created = await server.json<{ id: string }>('/rest/v0/servers', jsonBody(body))
    t.equal(created.status, 201, JSON.stringify(created.body))
    t.equal(created.response.headers.get('location'), `/rest/v0/servers/${created.body.id}`)
    return created.body.id
  }

  const id = await add({ host: 'pool.example', username: 'root', password: 'pool-secret-1', label: 'Prod' })

  t.test('an added pool connects in the background; the record never carries the password', async (t) => {
    const record = await statusOf(server, id, 'connected')
    t.same(record, {
      id,
      type: 'server',
      host: 'pool.example',
      label: 'Prod',
      username: 'root',
      allowUnauthorized: false,
      readOnly: false,
      enabled: true,
      status: 'connected',
      poolId: 'pool-1',
      master: 'host-1',
      poolNameLabel: 'Production',
      fingerprint: 'AA:BB:CC',
    })
    const listed = await server.request('/rest/v0/servers?fields=*&ndjson=true')
    t.notMatch(await listed.text(), /pool-secret/)
    for (const file of readdirSync(server.dataDir)) {
      if (file.startsWith('keel.sqlite')) t.notOk(readFileSync(join(server.dataDir, file)).includes('pool-secret-1'), `${file} holds no clear password`)
    }
    const filtered = await server.json<Obj[]>('/rest/v0/servers?fields=host,status&filter=status:connected&limit=1')
    t.same(filtered.body, [{ host: 'pool.example', status: 'connected', href: `/rest/v0/servers/${id}` }])
  })

  t.test('bad bodies are refused, naming the parameter, and add nothing', async (t) => {
    const before = await ids(server)
    const cases: Array<[Obj, string]> = [
      [{ host: 'h2', username: 'root' }, 'password'],
      [{ host: 'h2', username: 'root', password: 'x', port: 443 }, 'port'],
      [{ host: 'has space', username: 'root', password: 'x' }, 'host'],
      [{ host: 'h2', username: 'root', password: 'x', readOnly: 'yes' }, 'readOnly'],
      [{ host: 'h2', username: '', password: 'x' }, 'username'],
    ]
    for (const [body, field] of cases) {
      const refused = await server.json<{ code: string; data: { errors: Array<{ path: string }> } }>('/rest/v0/servers', jsonBody(body))
      t.equal(refused.status, 422, field)
      t.equal(refused.body.code, 'INVALID_PARAMETERS')
      t.ok(refused.body.data.errors.some((error) => error.path.includes(field)), `names ${field}: ${JSON.stringify(refused.body.data.errors)}`)
    }
    const huge = await server.json<{ code: string }>('/rest/v0/servers', jsonBody({ host: 'h3', username: 'root', password: 'x'.repeat(2 * 1024 * 1024) }))
    t.equal(huge.status, 413)
    t.equal(huge.body.code, 'BODY_TOO_LARGE')
    const twice = await server.json('/rest/v0/servers', jsonBody({ host: 'pool.example', username: 'root', password: 'x' }))
    t.equal(twice.status, 409)
    t.same(twice.body, {
      error: 'server with host pool.example already exists',
      code: 'OBJECT_ALREADY_EXISTS',
      data: { type: 'server', field: 'host', value: 'pool.example' },
    })
    const badPatch = await server.json(`/rest/v0/servers/${id}`, jsonBody({ fingerprint: 'FF:FF' }, 'PATCH'))
    t.equal(badPatch.status, 422, 'a pin cannot be set by hand, only cleared')
    t.equal((await server.json(`/rest/v0/servers/${id}`, jsonBody({}, 'PATCH'))).status, 422)
    t.same(await ids(server), before)
    t.equal(pools.attempts.length, 1, 'no connection attempted')
  })

  t.test('missing entries are 404 on every route', async (t) => {
    const missing = '6f0a53b4-0000-4000-8000-000000000000'
    const body = { error: `no such server ${missing}`, code: 'NO_SUCH_OBJECT', data: { id: missing, type: 'server' } }
    t.same((await server.json(`/rest/v0/servers/${missing}`)).body, body)
    for (const [path, init] of [
      [`/rest/v0/servers/${missing}`, jsonBody({ label: 'x' }, 'PATCH')],
      [`/rest/v0/servers/${missing}`, { method: 'DELETE' }],
      [`/rest/v0/servers/${missing}/actions/connect`, { method: 'POST' }],
      [`/rest/v0/servers/${missing}/actions/disconnect`, { method: 'POST' }],
      [`/rest/v0/servers/${missing}/tasks`, {}],
    ] as const) {
      const answer = await server.json(path, init)
      t.equal(answer.status, 404, `${init.method ?? 'GET'} ${path}`)
      t.same(answer.body, body)
    }
  })

  t.test('connect is 409 when connected; disconnect runs as a task, then is 409', async (t) => {
    const again = await server.json(`/rest/v0/servers/${id}/actions/connect`, { method: 'POST' })
    t.equal(again.status, 409)
    t.same(again.body, { error: 'incorrect state', code: 'INCORRECT_STATE', data: { actual: 'connected', expected: 'disconnected', object: id, property: 'status' } })
    const accepted = await server.json<{ taskId: string }>(`/rest/v0/servers/${id}/actions/disconnect`, { method: 'POST' })
    t.equal(accepted.status, 202)
    t.equal(accepted.response.headers.get('location'), `/rest/v0/tasks/${accepted.body.taskId}`)
    const task = await server.json<Obj>(`/rest/v0/tasks/${accepted.body.taskId}?wait=true`)
    t.match(task.body, { status: 'success', properties: { name: 'disconnect server', objectId: id, objectType: 'server' } })
    t.match(await server.json(`/rest/v0/servers/${id}`), { body: { status: 'disconnected', enabled: false } })
    t.notOk(pools.connected('pool-1'), 'logged out')
    const twice = await server.json<{ code: string }>(`/rest/v0/servers/${id}/actions/disconnect`, { method: 'POST' })
    t.equal(twice.status, 409)
    t.equal(twice.body.code, 'INCORRECT_STATE')

    t.equal((await server.request(`/rest/v0/servers/${id}/actions/connect?sync=true`, { method: 'POST' })).status, 204)
    t.match(await server.json(`/rest/v0/servers/${id}`), { body: { status: 'connected', enabled: true } })
    const tasks = await server.json<Obj[]>(`/rest/v0/servers/${id}/tasks?fields=status,properties.name`)
    t.same(
      tasks.body.map((one) => [one['status'], (one['properties'] as Obj)['name']]),
      [
        ['success', 'disconnect server'],
        ['success', 'connect server'],
      ],
    )
  })

  t.test('a refused connection answers sync=true with its reason and is not retried', async (t) => {
    pools.add('locked.example', { ...POOL, poolId: 'pool-2' })
    const locked = await add({ host: 'locked.example', username: 'root', password: 'wrong' })
    const failed = await statusOf(server, locked, 'disconnected')
    t.match(failed['error'], { code: 'SESSION_AUTHENTICATION_FAILED', name: 'XapiError' })
    t.equal(scheduler.pending, 0, 'no retry')
    const sync = await server.json<Obj>(`/rest/v0/servers/${locked}/actions/connect?sync=true`, { method: 'POST' })
    t.equal(sync.status, 502)
    t.match(sync.body, {
      code: 'SERVER_CONNECTION_FAILED',
      error: 'could not connect: SESSION_AUTHENTICATION_FAILED(root, Authentication failure)',
      data: { serverId: locked, error: { code: 'SESSION_AUTHENTICATION_FAILED', params: ['root', 'Authentication failure'] } },
    })

    const attempts = pools.attempts.length
    t.equal((await server.request(`/rest/v0/servers/${locked}`, jsonBody({ password: 'pool-secret-1' }, 'PATCH'))).status, 204)
    const mended = await statusOf(server, locked, 'connected')
    t.equal(mended['error'], undefined, 'the change cleared the error')
    t.equal(pools.attempts.length, attempts + 1)
    t.equal(pools.attempts.at(-1)?.password, 'pool-secret-1')

    t.equal((await server.request(`/rest/v0/servers/${locked}`, jsonBody({ label: null, readOnly: true }, 'PATCH'))).status, 204)
    const readOnly = await statusOf(server, locked, 'connected')
    t.equal(readOnly['readOnly'], true)
    t.equal(readOnly['label'], 'Production', 'without a label, the pool name')
    t.equal(pools.attempts.at(-1)?.readOnly, true, 'readOnly reconnects with it')
  })

  t.test('a pool already connected through another entry is a 409', async (t) => {
    pools.add('alias.example', { ...POOL })
    const alias = await add({ host: 'alias.example', username: 'root', password: 'pool-secret-1' })
    const refused = await statusOf(server, alias, 'disconnected')
    t.match(refused['error'], { code: 'POOL_ALREADY_CONNECTED', message: 'this pool is already connected' })
    const sync = await server.json<Obj>(`/rest/v0/servers/${alias}/actions/connect?sync=true`, { method: 'POST' })
    t.equal(sync.status, 409)
    t.match(sync.body, { code: 'POOL_ALREADY_CONNECTED', data: { serverId: alias, params: ['pool-1'] } })
    t.match(await server.json(`/rest/v0/servers/${id}`), { body: { status: 'connected' } }, 'the first entry is untouched')
    t.equal((await server.request(`/rest/v0/servers/${alias}`, { method: 'DELETE' })).status, 204)
  })

  t.test('watchers see each status change', async (t) => {
    const watch = await openLines(`${server.url}/rest/v0/servers?ndjson=true&watch=true&fields=id,status`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
    t.teardown(() => watch.close())
    pools.add('watched.example', { ...POOL, poolId: 'pool-3' })
    const watched = await add({ host: 'watched.example', username: 'root', password: 'pool-secret-1' })
    const lines = (await watch.until(3)) as Array<[string, Obj]>
    t.same(
      lines.map(([, value]) => [value['id'], value['status']]),
      [
        [watched, 'disconnected'],
        [watched, 'connecting'],
        [watched, 'connected'],
      ],
    )
  })

  t.test('delete logs out first, then forgets the entry', async (t) => {
    const logouts = pools.logouts.length
    t.equal((await server.request(`/rest/v0/servers/${id}`, { method: 'DELETE' })).status, 204)
    t.equal(pools.logouts.length, logouts + 1)
    t.notOk(pools.connected('pool-1'))
    t.equal((await server.request(`/rest/v0/servers/${id}`)).status, 404)
  })
})

t.test('access control: the server resource guards every route, and a refusal changes nothing', async (t) => {
  const pools = new FakePools()
  pools.add('pool.example', { ...POOL })
  const server = await startServer({ app: { poolConnector: pools, reconnectScheduler: new ManualScheduler() } })
  t.teardown(() => server.close())
  const created = await server.json<{ id: string }>('/rest/v0/servers', jsonBody({ host: 'pool.example', username: 'root', password: 'pool-secret-1' }))
  const id = created.body.id
  await statusOf(server, id, 'connected')
  await server.json('/rest/v0/users', jsonBody({ email: 'viewer@example.org', password: 'pw-viewer' }))
  const viewer = basic('viewer@example.org', 'pw-viewer')
  const attempts = pools.attempts.length

  t.same((await server.json('/rest/v0/servers', { auth: viewer })).body, [], 'a listing shows only what may be read')
  for (const [path, init, action] of [
    ['/rest/v0/servers', jsonBody({ host: 'other.example', username: 'root', password: 'x' }), 'create'],
    [`/rest/v0/servers/${id}`, {}, 'read'],
    [`/rest/v0/servers/${id}`, jsonBody({ password: 'x' }, 'PATCH'), 'create'],
    [`/rest/v0/servers/${id}`, { method: 'DELETE' }, 'delete'],
    [`/rest/v0/servers/${id}/actions/connect`, { method: 'POST' }, 'connect'],
    [`/rest/v0/servers/${id}/actions/disconnect`, { method: 'POST' }, 'disconnect'],
  ] as const) {
    const refused = await server.json<{ code: string; data: { missingPrivileges: Array<{ resource: string; action: string }> } }>(path, { ...init, auth: viewer })
    t.equal(refused.status, 403, `${init.method ?? 'GET'} ${path}`)
    t.equal(refused.body.code, 'NOT_ENOUGH_PRIVILEGES')
    t.match(refused.body.data.missingPrivileges, [{ resource: 'server', action }])
  }
  t.same(await ids(server), [`/rest/v0/servers/${id}`])
  t.match(await server.json(`/rest/v0/servers/${id}`), { body: { status: 'connected', enabled: true } })
  t.equal(pools.attempts.length, attempts, 'no attempt was made')

  t.test('a role granting read and disconnect on servers lets its holder do just that', async (t) => {
    const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'pool operators' }))
    for (const action of ['read', 'disconnect']) {
      const made = await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: role.body.id, resource: 'server', action, effect: 'allow' }))
      t.equal(made.status, 201)
    }
    const users = await server.json<Array<{ id: string; email: string }>>('/rest/v0/users?fields=id,email')
    const viewerId = users.body.find((user) => user.email === 'viewer@example.org')?.id
    t.equal((await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${String(viewerId)}`, { method: 'PUT' })).status, 204)
    t.same((await server.json('/rest/v0/servers', { auth: viewer })).body, [`/rest/v0/servers/${id}`])
    t.match(await server.json(`/rest/v0/servers/${id}`, { auth: viewer }), { status: 200, body: { status: 'connected' } })
    t.equal((await server.request(`/rest/v0/servers/${id}`, { method: 'DELETE', auth: viewer })).status, 403)
    t.equal((await server.request(`/rest/v0/servers/${id}/actions/disconnect?sync=true`, { method: 'POST', auth: viewer })).status, 204)
    t.match(await server.json(`/rest/v0/servers/${id}`), { body: { status: 'disconnected', enabled: false } })
  })
})

t.test('on the lab driver, an entry is kept and says how to connect pools', { skip: process.env['KEEL_TEST_DRIVER'] === 'xapi' ? 'issue 28: a case of the lab driver; over XAPI an entry connects, as the rest of this file tests' : false }, async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const created = await server.json<{ id: string }>('/rest/v0/servers', jsonBody({ host: 'pool.example', username: 'root', password: 'x' }))
  t.equal(created.status, 201)
  for (;;) {
    const { body } = await server.json<Obj>(`/rest/v0/servers/${created.body.id}`)
    if (body['error'] !== undefined) {
      t.match(body, { status: 'disconnected', enabled: true })
      t.same(body['error'], {
        name: 'KeelError',
        code: 'XAPI_DRIVER_REQUIRED',
        message: 'this service runs the lab driver: set [driver] kind = xapi to connect pools',
      })
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const sync = await server.json<Obj>(`/rest/v0/servers/${created.body.id}/actions/connect?sync=true`, { method: 'POST' })
  t.equal(sync.status, 501)
  t.equal(sync.body['code'], 'XAPI_DRIVER_REQUIRED')
})

t.test('a restart connects the enabled entries and leaves the disabled ones', async (t) => {
  const pools = new FakePools()
  pools.add('on.example', { ...POOL })
  pools.add('off.example', { ...POOL, poolId: 'pool-2' })
  const first = await startServer({ app: { poolConnector: pools, reconnectScheduler: new ManualScheduler() } })
  t.teardown(() => first.close())
  const on = (await first.json<{ id: string }>('/rest/v0/servers', jsonBody({ host: 'on.example', username: 'root', password: 'pool-secret-1' }))).body.id
  const off = (await first.json<{ id: string }>('/rest/v0/servers', jsonBody({ host: 'off.example', username: 'root', password: 'pool-secret-1' }))).body.id
  await statusOf(first, on, 'connected')
  await statusOf(first, off, 'connected')
  t.equal((await first.request(`/rest/v0/servers/${off}/actions/disconnect?sync=true`, { method: 'POST' })).status, 204)
  await first.close({ keepData: true })
  t.same(pools.logouts.sort(), ['off.example', 'on.example'], 'a stop logs out of every pool')

  const second = await startServer({ dataDir: first.dataDir, app: { poolConnector: pools, reconnectScheduler: new ManualScheduler() } })
  t.teardown(async () => {
    await second.close()
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  t.match(await statusOf(second, on, 'connected'), { poolId: 'pool-1', enabled: true })
  t.match(await second.json(`/rest/v0/servers/${off}`), { body: { status: 'disconnected', enabled: false } })
  t.same(
    pools.attempts.map((attempt) => attempt.host),
    ['on.example', 'off.example', 'on.example'],
    'only the enabled entry was connected, with its password unsealed',
  )
  t.equal(pools.attempts.at(-1)?.password, 'pool-secret-1')
})
