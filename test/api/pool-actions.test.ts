import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startServer } from '../helpers/server.js'

type Obj = Record<string, unknown>
const PASSWORD = 'a-user-password'

t.test('create_internal_network: a network of the pool with no PIF; bad input changes nothing', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/actions/create_internal_network?sync=true`
  const networks = async (): Promise<string[]> => (await server.json<string[]>('/rest/v0/networks')).body

  const created = await server.json<Obj>(path, jsonBody({ name: 'inside', description: 'VM to VM', mtu: 9000 }))
  t.equal(created.status, 201)
  const id = String(created.body['id'])
  t.match((await server.json<Obj>(`/rest/v0/networks/${id}`)).body, { name_label: 'inside', name_description: 'VM to VM', MTU: 9000, PIFs: [], $pool: demo.pool })

  const before = await networks()
  t.match(await server.json(`/rest/v0/pools/nope/actions/create_internal_network?sync=true`, jsonBody({ name: 'x' })), { status: 404 })
  t.match(await server.json(path, jsonBody({ name: '', mtu: 9000 })), { status: 422, body: { data: { errors: [{ path: /name/ }] } } })
  t.match(await server.json(path, jsonBody({ name: 'x', mtu: 1 })), { status: 422, body: { data: { errors: [{ path: /mtu/ }] } } })

  const user = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'reader@example.net', password: PASSWORD }))
  const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'reader' }))
  await server.json('/rest/v0/acl-privileges', jsonBody({ effect: 'allow', resource: 'pool', action: 'read', roleId: role.body.id }))
  await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${user.body.id}`, { method: 'PUT' })
  const reader = basic('reader@example.net', PASSWORD)
  t.match(await server.json(path, { ...jsonBody({ name: 'x' }), auth: reader }), {
    status: 403,
    body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'pool', action: 'create:network' }] } },
  })
  t.same(await networks(), before)
})
