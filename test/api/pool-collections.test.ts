import t from 'tap'
import { FakePools, ManualScheduler } from '../helpers/fake-pools.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer } from '../helpers/server.js'
import { openLines, openStream } from '../helpers/streams.js'

type Obj = Record<string, unknown>
const admin = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }

const PROXY_ID = 'e625ea0c-a876-405a-b838-109d762efe88'

t.test('gpu-groups, vdi-unmanaged and proxies', async (t) => {
  const server = await startServer({
    config: {
      proxies: [
        { id: PROXY_ID, name: 'proxy-1', url: 'https://secret-token@10.0.0.9/', version: '0.29.29', vmUuid: '7330139d-288f-2248-5986-d508ea71f12c' },
        { id: '17210f70-24f7-4309-bbf7-e6381fdc0b13', name: 'proxy-2', url: 'https://10.0.0.10:8443/', address: '10.0.0.10:8443' },
      ],
    },
  })
  t.teardown(() => server.close())
  const [pool] = (await server.json<Obj[]>('/rest/v0/pools?fields=id')).body

  t.test('the lab has a GPU group per pool, with the collection parameters', async (t) => {
    const groups = await server.json<Obj[]>('/rest/v0/gpu-groups?fields=*')
    t.equal(groups.status, 200)
    t.equal(groups.body.length, 1)
    const group = groups.body[0] as Obj
    t.match(group, { type: 'gpuGroup', $pool: pool?.['id'], name_label: 'Group of lab GPUs', pgpus: [], vgpus: [], allocation: 'depth_first' })
    const one = await server.json<Obj>(`/rest/v0/gpu-groups/${String(group['id'])}`)
    const { href: _href, ...whole } = group
    t.same(one.body, whole)
    const ndjson = await server.request(`/rest/v0/gpu-groups?ndjson=true&fields=name_label&filter=${encodeURIComponent('name_label:/lab/')}&limit=1`)
    t.equal(ndjson.headers.get('content-type'), 'application/x-ndjson')
    t.equal(await ndjson.text(), `${JSON.stringify({ name_label: 'Group of lab GPUs', href: `/rest/v0/gpu-groups/${String(group['id'])}` })}\n`)
  })

  t.test('the lab has no unmanaged disk: an empty collection, its schema declared', async (t) => {
    t.same((await server.json('/rest/v0/vdi-unmanaged?fields=*')).body, [])
    const missing = await server.json('/rest/v0/vdi-unmanaged/nope')
    t.equal(missing.status, 404)
    t.same(missing.body, { error: 'no such VDI-unmanaged nope', code: 'NO_SUCH_OBJECT', data: { id: 'nope', type: 'VDI-unmanaged' } })
    const openapi = await server.json<{ components: { schemas: Obj } }>('/rest/v0/docs/swagger.json')
    for (const name of ['VdiUnmanaged', 'GpuGroup', 'Proxy', 'Server']) t.ok(openapi.body.components.schemas[name], `${name} in the OpenAPI document`)
  })

  t.test('proxies are what the configuration declares, without the credentials of their URLs', async (t) => {
    const listed = await server.json<Obj[]>('/rest/v0/proxies?fields=*')
    t.same(listed.body, [
      {
        id: PROXY_ID,
        name: 'proxy-1',
        url: 'https://10.0.0.9/',
        version: '0.29.29',
        vmUuid: '7330139d-288f-2248-5986-d508ea71f12c',
        type: 'proxy',
        href: `/rest/v0/proxies/${PROXY_ID}`,
      },
      {
        id: '17210f70-24f7-4309-bbf7-e6381fdc0b13',
        name: 'proxy-2',
        url: 'https://10.0.0.10:8443/',
        address: '10.0.0.10:8443',
        type: 'proxy',
        href: '/rest/v0/proxies/17210f70-24f7-4309-bbf7-e6381fdc0b13',
      },
    ])
    t.notMatch(JSON.stringify((await server.json(`/rest/v0/proxies/${PROXY_ID}`)).body), /secret-token/)
    t.same((await server.json('/rest/v0/proxies?fields=name&filter=vmUuid?')).body, [{ name: 'proxy-1', href: `/rest/v0/proxies/${PROXY_ID}` }])
    t.equal((await server.json('/rest/v0/proxies/nope')).status, 404)
  })

  t.test('each is guarded by its resource', async (t) => {
    await server.json('/rest/v0/users', jsonBody({ email: 'viewer@example.org', password: 'pw-viewer' }))
    const viewer = basic('viewer@example.org', 'pw-viewer')
    for (const name of ['gpu-groups', 'vdi-unmanaged', 'proxies']) t.same((await server.json(`/rest/v0/${name}`, { auth: viewer })).body, [], name)
    const refused = await server.json<Obj>(`/rest/v0/proxies/${PROXY_ID}`, { auth: viewer })
    t.equal(refused.status, 403)
    t.match(refused.body, { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'proxy', action: 'read' }] } })

    const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'readers' }))
    for (const resource of ['proxy', 'gpuGroup']) {
      t.equal((await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: role.body.id, resource, action: 'read', effect: 'allow' }))).status, 201)
    }
    const users = await server.json<Array<{ id: string; email: string }>>('/rest/v0/users?fields=id,email')
    const viewerId = users.body.find((user) => user.email === 'viewer@example.org')?.id
    t.equal((await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${String(viewerId)}`, { method: 'PUT' })).status, 204)
    t.equal((await server.json<string[]>('/rest/v0/proxies', { auth: viewer })).body.length, 2)
    t.equal((await server.json<string[]>('/rest/v0/gpu-groups', { auth: viewer })).body.length, 1)
  })

  t.test('each can be watched', async (t) => {
    for (const name of ['gpu-groups', 'vdi-unmanaged', 'proxies']) {
      const watch = await openLines(`${server.url}/rest/v0/${name}?ndjson=true&watch=true`, admin)
      t.equal(watch.response.statusCode, 200, name)
      t.equal(watch.response.headers['content-type'], 'application/x-ndjson')
      watch.close()
    }
  })
})

t.test('server entries are on the event stream', async (t) => {
  const pools = new FakePools()
  pools.add('pool.example', { poolId: 'pool-1', poolNameLabel: 'Production', master: 'host-1', username: 'root', password: 'pw-pool' })
  const server = await startServer({ app: { poolConnector: pools, reconnectScheduler: new ManualScheduler() } })
  t.teardown(() => server.close())
  const stream = await openStream(`${server.url}/rest/v0/events`, admin)
  t.teardown(() => stream.close())
  const init = /event: init\ndata: \{"id":"([0-9a-f-]{36})"\}/.exec(await stream.until((text) => text.includes('event: init')))
  const subscribed = await server.json(`/rest/v0/events/${String(init?.[1])}/subscriptions`, jsonBody({ collection: 'server', fields: ['status'] }))
  t.equal(subscribed.status, 201)
  await server.json('/rest/v0/servers', jsonBody({ host: 'pool.example', username: 'root', password: 'pw-pool' }))
  const text = await stream.until((text) => text.includes('"status":"connected"'))
  const statuses = [...text.matchAll(/event: (\w+)\ndata: \{"\$subscription":"server","status":"(\w+)"\}/g)].map((match) => [match[1], match[2]])
  t.same(statuses, [
    ['add', 'disconnected'],
    ['update', 'connecting'],
    ['update', 'connected'],
  ])
  t.notMatch(text, /pw-pool/)
})
