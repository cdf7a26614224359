import { Agent, get as httpGet } from 'node:http'
import t from 'tap'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

interface Token {
  id: string
  identifier: string
  expiration: number
}

const PASSWORD = 'cache-user-password'

async function userWithToken(server: TestServer, email: string, permission: 'none' | 'admin' = 'none'): Promise<{ id: string; token: Token }> {
  const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: PASSWORD, permission }))
  const token = await server.json<{ token: Token }>(`/rest/v0/users/${created.body.id}/authentication_tokens`, {
    ...jsonBody({ expiresIn: 120_000 }),
    auth: basic(email, PASSWORD),
  })
  return { id: created.body.id, token: token.body.token }
}

const withToken = (token: Token): { headers: Record<string, string>; auth: null } => ({
  headers: { cookie: `authenticationToken=${token.id}` },
  auth: null,
})

t.test('a remembered token takes every change into account on the very next request', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())

  t.test('revoking', async (t) => {
    const { id, token } = await userWithToken(server, 'revoked@example.net')
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 200, 'remembered now')
    const revoked = await server.request(`/rest/v0/users/${id}/authentication_tokens/${token.identifier}`, {
      method: 'DELETE',
      auth: basic('revoked@example.net', PASSWORD),
    })
    t.equal(revoked.status, 204, 'tokens are revoked by their owner')
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 401)
  })

  t.test('deleting the user', async (t) => {
    const { id, token } = await userWithToken(server, 'deleted@example.net')
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 200)
    t.equal((await server.request(`/rest/v0/users/${id}`, { method: 'DELETE' })).status, 204)
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 401)
  })

  t.test('demoting the user', async (t) => {
    const { id, token } = await userWithToken(server, 'demoted@example.net', 'admin')
    t.equal((await server.request('/rest/v0/acl-audit', withToken(token))).status, 200, 'an administrator route')
    t.equal((await server.request(`/rest/v0/users/${id}`, jsonBody({ permission: 'none' }, 'PATCH'))).status, 204)
    const refused = await server.json('/rest/v0/acl-audit', withToken(token))
    t.equal(refused.status, 403)
    t.match(refused.body, { code: 'FORBIDDEN' })
  })

  t.test("changing the user's password", async (t) => {
    const { id, token } = await userWithToken(server, 'password@example.net')
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 200)
    t.equal((await server.request(`/rest/v0/users/${id}`, jsonBody({ password: 'another-one' }, 'PATCH'))).status, 204)
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 401)
  })

  t.test('expiry, to the millisecond', async (t) => {
    const { id, token } = await userWithToken(server, 'expiring@example.net')
    server.clock.now = token.expiration - 1
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 200, 'a millisecond before')
    server.clock.now = token.expiration
    t.equal((await server.request(`/rest/v0/users/${id}`, withToken(token))).status, 401, 'at its expiration')
  })
})

t.test('on one keep-alive connection, which remembers its token, every change applies to its next request', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  // The connection outlives the steps between its requests (each new user hashes a password),
  // however long a busy machine takes over them, instead of the server's 5 s between requests.
  server.app.server.keepAliveTimeout = 0
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  /** A GET on the one connection: its status, and whether the connection was the one already open. */
  const getWith = (path: string, headers: Record<string, string>): Promise<{ status: number; reused: boolean }> =>
    new Promise((resolve, reject) => {
      const req = httpGet(server.url + path, { agent, headers }, (res) => {
        res.resume()
        res.once('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }))
      })
      req.once('error', reject)
    })
  const get = (path: string, token: Token): Promise<{ status: number; reused: boolean }> => getWith(path, withToken(token).headers)

  const { id, token } = await userWithToken(server, 'connection@example.net')
  t.same(await get(`/rest/v0/users/${id}`, token), { status: 200, reused: false })
  t.same(await get(`/rest/v0/users/${id}`, token), { status: 200, reused: true }, 'remembered by the connection')
  t.same(await get(`/rest/v0/users/${id}`, { ...token, id: token.id.slice(0, -1) + (token.id.endsWith('A') ? 'B' : 'A') }), { status: 401, reused: true }, 'another token on it is checked anew')
  t.same(await get(`/rest/v0/users/${id}`, token), { status: 200, reused: true })

  server.clock.now = token.expiration
  t.same(await get(`/rest/v0/users/${id}`, token), { status: 401, reused: true }, 'expired, to the millisecond')
  server.clock.now = token.expiration - 1

  const other = await userWithToken(server, 'connection-2@example.net')
  t.same(await get(`/rest/v0/users/${other.id}`, other.token), { status: 200, reused: true })
  const revoked = await server.request(`/rest/v0/users/${other.id}/authentication_tokens/${other.token.identifier}`, {
    method: 'DELETE',
    auth: basic('connection-2@example.net', PASSWORD),
  })
  t.equal(revoked.status, 204)
  t.same(await get(`/rest/v0/users/${other.id}`, other.token), { status: 401, reused: true }, 'revoked')

  const third = await userWithToken(server, 'connection-3@example.net')
  t.same(await get(`/rest/v0/users/${third.id}`, third.token), { status: 200, reused: true })
  t.equal((await server.request(`/rest/v0/users/${third.id}`, jsonBody({ password: 'another-one' }, 'PATCH'))).status, 204)
  t.same(await get(`/rest/v0/users/${third.id}`, third.token), { status: 401, reused: true }, 'ended with its password')

  const admin = await userWithToken(server, 'connection-admin@example.net', 'admin')
  t.same(await get('/rest/v0/acl-audit', admin.token), { status: 200, reused: true }, 'an administrator route')
  t.equal((await server.request(`/rest/v0/users/${admin.id}`, jsonBody({ permission: 'none' }, 'PATCH'))).status, 204)
  t.same(await get('/rest/v0/acl-audit', admin.token), { status: 403, reused: true }, 'demoted')
  t.same(await get(`/rest/v0/users/${admin.id}`, admin.token), { status: 200, reused: true })
  t.equal((await server.request(`/rest/v0/users/${admin.id}`, { method: 'DELETE' })).status, 204)
  t.same(await get(`/rest/v0/users/${admin.id}`, admin.token), { status: 401, reused: true }, 'deleted')

  const fourth = await userWithToken(server, 'connection-4@example.net')
  t.same(await get(`/rest/v0/users/${fourth.id}`, fourth.token), { status: 200, reused: true })
  const basicOnIt = await getWith(`/rest/v0/users/${fourth.id}`, { authorization: basic('connection-4@example.net', 'wrong-password') })
  t.same(basicOnIt, { status: 401, reused: true }, 'other credentials on it are checked anew')
  t.same(await get(`/rest/v0/users/${fourth.id}`, fourth.token), { status: 200, reused: true })
})
