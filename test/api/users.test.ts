import t from 'tap'
import { basic, jsonBody, startServer, ADMIN_EMAIL } from '../helpers/server.js'

t.test('users and groups', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())

  // Each subtest makes the user it changes, so none depends on another having run.
  const newUser = async (email: string, password = 'pw-1'): Promise<string> => {
    const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password, name: 'Ops' }))
    t.equal(created.status, 201)
    t.equal(created.response.headers.get('location'), `/rest/v0/users/${created.body.id}`)
    return created.body.id
  }
  const userId = await newUser('ops@example.org')

  t.test('the record never carries the password or its hash', async (t) => {
    const { status, body } = await server.json<Record<string, unknown>>(`/rest/v0/users/${userId}`)
    t.equal(status, 200)
    t.same(body, { id: userId, type: 'user', email: 'ops@example.org', name: 'Ops', permission: 'none', groups: [], preferences: {} })
    const all = await server.json<unknown[]>('/rest/v0/users?fields=*')
    t.notMatch(JSON.stringify(all.body), /pw|password|scrypt/)
  })

  t.test('listing gives hrefs, fields give objects', async (t) => {
    const hrefs = await server.json<string[]>('/rest/v0/users')
    t.equal(hrefs.body.length, 2)
    t.ok(hrefs.body.includes(`/rest/v0/users/${userId}`))
    const fields = await server.json('/rest/v0/users?fields=email,permission&filter=permission:admin')
    t.same(fields.body, [{ email: ADMIN_EMAIL, permission: 'admin', href: (fields.body as Array<{ href: string }>)[0]?.href }])
  })

  t.test('duplicate email is 409 and creates nothing', async (t) => {
    const { status, body } = await server.json('/rest/v0/users', jsonBody({ email: 'OPS@example.org', password: 'x' }))
    t.equal(status, 409)
    t.same(body, {
      error: 'user with email OPS@example.org already exists',
      code: 'OBJECT_ALREADY_EXISTS',
      data: { type: 'user', field: 'email', value: 'OPS@example.org' },
    })
    t.equal((await server.json<string[]>('/rest/v0/users')).body.length, 2)
  })

  t.test('missing user is 404 with the standard body', async (t) => {
    const { status, body } = await server.json('/rest/v0/users/nope')
    t.equal(status, 404)
    t.same(body, { error: 'no such user nope', code: 'NO_SUCH_OBJECT', data: { id: 'nope', type: 'user' } })
    t.equal((await server.json('/rest/v0/users/nope', jsonBody({ name: 'x' }, 'PATCH'))).status, 404)
    t.equal((await server.json('/rest/v0/users/nope', { method: 'DELETE' })).status, 404)
  })

  t.test('PATCH changes only the given fields; invalid patches change nothing', async (t) => {
    const patchedId = await newUser('patched@example.org')
    const patched = await server.request(`/rest/v0/users/${patchedId}`, jsonBody({ name: 'Operations', password: 'pw-2' }, 'PATCH'))
    t.equal(patched.status, 204)
    const { body } = await server.json<{ name: string; email: string }>(`/rest/v0/users/${patchedId}`)
    t.equal(body.name, 'Operations')
    t.equal(body.email, 'patched@example.org')
    t.same((await server.json('/rest/v0/users', { auth: basic('patched@example.org', 'pw-2') })).body, [], 'listings show what may be read')
    t.equal((await server.request('/rest/v0/users', { auth: basic('patched@example.org', 'pw-1') })).status, 401)

    const bad = await server.json(`/rest/v0/users/${patchedId}`, jsonBody({ name: 'Zed', permission: 'root' }, 'PATCH'))
    t.equal(bad.status, 422)
    t.equal((await server.json<{ name: string }>(`/rest/v0/users/${patchedId}`)).body.name, 'Operations')
    const empty = await server.json(`/rest/v0/users/${patchedId}`, jsonBody({}, 'PATCH'))
    t.equal(empty.status, 422)
  })

  t.test('a non-administrator reaches only the self endpoints', async (t) => {
    const auth = basic('ops@example.org', 'pw-1')
    const me = await server.request('/rest/v0/users/me?fields=email', { auth })
    t.equal(me.status, 307)
    t.equal(me.headers.get('location'), `/rest/v0/users/${userId}?fields=email`)
    const own = await server.json(`/rest/v0/users/${userId}`, { auth })
    t.equal(own.status, 200)
    const adminId = ((await server.json<Array<{ id: string }>>('/rest/v0/users?fields=id&filter=permission:admin')).body[0] as { id: string }).id
    const other = await server.json(`/rest/v0/users/${adminId}`, { auth })
    t.equal(other.status, 403)
    t.same(other.body, { error: 'not enough privileges', code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'user', action: 'read' }] } })
    const create = await server.json('/rest/v0/groups', { ...jsonBody({ name: 'x' }), auth })
    t.equal(create.status, 403)
    t.equal((await server.json<string[]>('/rest/v0/groups')).body.length, 0)
    const vms = await server.json('/rest/v0/vms', { auth })
    t.same(vms.body, [], 'no role, no objects')
  })

  t.test('groups: create, rename, membership, delete', async (t) => {
    const group = await server.json<{ id: string }>('/rest/v0/groups', jsonBody({ name: 'operators' }))
    t.equal(group.status, 201)
    const groupId = group.body.id
    t.equal(group.response.headers.get('location'), `/rest/v0/groups/${groupId}`)
    t.equal((await server.json('/rest/v0/groups', jsonBody({ name: 'operators' }))).status, 409)
    t.equal((await server.request(`/rest/v0/groups/${groupId}`, jsonBody({ name: 'ops' }, 'PATCH'))).status, 204)
    for (let i = 0; i < 2; i++) {
      t.equal((await server.request(`/rest/v0/groups/${groupId}/users/${userId}`, { method: 'PUT' })).status, 204, 'PUT is idempotent')
    }
    t.same((await server.json(`/rest/v0/groups/${groupId}`)).body, { id: groupId, type: 'group', name: 'ops', users: [userId] })
    t.same((await server.json<{ groups: string[] }>(`/rest/v0/users/${userId}`)).body.groups, [groupId])
    t.equal((await server.json(`/rest/v0/groups/${groupId}/users/nobody`, { method: 'PUT' })).status, 404)
    for (let i = 0; i < 2; i++) {
      t.equal((await server.request(`/rest/v0/groups/${groupId}/users/${userId}`, { method: 'DELETE' })).status, 204)
    }
    t.same((await server.json<{ users: string[] }>(`/rest/v0/groups/${groupId}`)).body.users, [])
    t.equal((await server.json('/rest/v0/groups', jsonBody({}))).status, 422)
    t.equal((await server.request(`/rest/v0/groups/${groupId}`, { method: 'DELETE' })).status, 204)
    t.equal((await server.json(`/rest/v0/groups/${groupId}`)).status, 404)
  })

  t.test('the last administrator cannot be deleted or demoted; users cannot delete themselves', async (t) => {
    const adminId = ((await server.json<Array<{ id: string }>>('/rest/v0/users?fields=id&filter=permission:admin')).body[0] as { id: string }).id
    const self = await server.json(`/rest/v0/users/${adminId}`, { method: 'DELETE' })
    t.equal(self.status, 403)
    const demote = await server.json(`/rest/v0/users/${adminId}`, jsonBody({ permission: 'none' }, 'PATCH'))
    t.equal(demote.status, 409)
    t.equal((await server.json<{ permission: string }>(`/rest/v0/users/${adminId}`)).body.permission, 'admin')
  })

  t.test('DELETE removes the user and their access', async (t) => {
    const deletedId = await newUser('deleted@example.org')
    t.equal((await server.request('/rest/v0/users/me', { auth: basic('deleted@example.org', 'pw-1') })).status, 307)
    t.equal((await server.request(`/rest/v0/users/${deletedId}`, { method: 'DELETE' })).status, 204)
    t.equal((await server.json(`/rest/v0/users/${deletedId}`)).status, 404)
    t.equal((await server.request('/rest/v0/users/me', { auth: basic('deleted@example.org', 'pw-1') })).status, 401)
  })
})

t.test('failed logins are slowed per user without holding up others', async (t) => {
  const server = await startServer({ config: { authentication: { failedLoginDelay: 300 } } })
  t.teardown(() => server.close())
  await server.json('/rest/v0/users', jsonBody({ email: 'victim@example.org', password: 'right' }))
  const order: string[] = []
  const guesses = [1, 2].map((i) =>
    server.request('/rest/v0/users/me', { auth: basic('victim@example.org', `guess-${i}`) }).then((r) => {
      order.push(`guess-${i}:${r.status}`)
    }),
  )
  const other = server.request('/rest/v0/users', { auth: basic(ADMIN_EMAIL, 'test-admin-password') }).then((r) => {
    order.push(`admin:${r.status}`)
  })
  await Promise.all([...guesses, other])
  t.same(order, ['admin:200', 'guess-1:401', 'guess-2:401'], 'the other user is served while the guesses wait in turn')
})
