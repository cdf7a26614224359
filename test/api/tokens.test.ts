import t from 'tap'
import { basic, jsonBody, startServer, ADMIN_EMAIL, ADMIN_PASSWORD } from '../helpers/server.js'

interface Token {
  id: string
  identifier: string
  user_id: string
  created_at: number
  expiration: number
  description?: string
}

t.test('token lifecycle', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const adminId = ((await server.json<Array<{ id: string }>>('/rest/v0/users?fields=id')).body[0] as { id: string }).id
  const tokensPath = `/rest/v0/users/${adminId}/authentication_tokens`

  const created = await server.json<{ token: Token }>(tokensPath, jsonBody({ description: 'ci', expiresIn: '1 hour' }))
  t.equal(created.status, 201)
  const { token } = created.body
  t.match(token.id, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.equal(token.user_id, adminId)
  t.equal(token.created_at, server.clock.now)
  t.equal(token.expiration, server.clock.now + 3600_000)
  t.equal(token.description, 'ci')
  const cookie = { headers: { cookie: `authenticationToken=${token.id}` } }

  t.test('the token authenticates as its owner', async (t) => {
    const { status } = await server.json('/rest/v0/users', cookie)
    t.equal(status, 200)
  })

  t.test('the secret is not stored in the database', async (t) => {
    const rows = server.app.db.prepare('SELECT * FROM tokens').all()
    t.notMatch(JSON.stringify(rows), token.id)
  })

  t.test('/users/me/... answers 307 to your own id; the token route works through it', async (t) => {
    const redirected = await server.request('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), ...cookie })
    t.equal(redirected.status, 307)
    t.equal(redirected.headers.get('location'), tokensPath)
    const followed = await fetch(server.url + '/rest/v0/users/me/authentication_tokens', {
      method: 'POST',
      headers: { cookie: `authenticationToken=${token.id}`, 'content-type': 'application/json' },
      body: '{}',
    })
    t.equal(followed.status, 201, 'a client following the redirect gets a token')
    const refreshed = ((await followed.json()) as { token: Token }).token
    t.equal(refreshed.expiration, server.clock.now + 30 * 24 * 3600_000, 'default validity is 30 days')
  })

  t.test('listing shows identifiers, never secrets', async (t) => {
    const { status, body } = await server.json<Array<Record<string, unknown>>>(tokensPath)
    t.equal(status, 200)
    t.ok(body.length >= 1)
    t.notMatch(JSON.stringify(body), token.id)
    const listed = body.find((item) => item['identifier'] === token.identifier)
    t.same(listed, { identifier: token.identifier, user_id: adminId, created_at: token.created_at, expiration: token.expiration, description: 'ci' })
  })

  t.test('expiresIn bounds are 422 naming the bound; nothing is created', async (t) => {
    const before = (await server.json<unknown[]>(tokensPath)).body.length
    const short = await server.json(tokensPath, jsonBody({ expiresIn: '30 seconds' }))
    t.equal(short.status, 422)
    t.same(short.body, {
      error: 'invalid parameters: body.expiresIn must be at least 60 seconds',
      code: 'INVALID_PARAMETERS',
      data: { errors: [{ path: 'body.expiresIn', message: 'must be at least 60 seconds' }] },
    })
    const long = await server.json<{ data: { errors: Array<{ message: string }> } }>(tokensPath, jsonBody({ expiresIn: '1 year' }))
    t.equal(long.status, 422)
    t.match(long.body.data.errors[0]?.message, /maxTokenValidity/)
    const garbage = await server.json(tokensPath, jsonBody({ expiresIn: 'soon' }))
    t.equal(garbage.status, 422)
    const ms = await server.json<{ token: Token }>(tokensPath, jsonBody({ expiresIn: 120_000 }))
    t.equal(ms.body.token.expiration - ms.body.token.created_at, 120_000, 'milliseconds are accepted')
    t.equal((await server.json<unknown[]>(tokensPath)).body.length, before + 1)
  })

  t.test('reusing client.id returns the same token with a new expiration', async (t) => {
    const first = await server.json<{ token: Token }>(tokensPath, jsonBody({ client: { id: 'backup-box' }, expiresIn: '1 hour' }))
    server.clock.advance(60_000)
    const second = await server.json<{ token: Token }>(tokensPath, jsonBody({ client: { id: 'backup-box' }, expiresIn: '2 hours' }))
    t.equal(second.body.token.id, first.body.token.id)
    t.equal(second.body.token.identifier, first.body.token.identifier)
    t.equal(second.body.token.expiration, server.clock.now + 7200_000)
    t.equal((await server.request('/rest/v0/users', { headers: { cookie: `authenticationToken=${second.body.token.id}` } })).status, 200)
  })

  t.test('tokens are personal: 403 for someone else', async (t) => {
    const other = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'other@example.org', password: 'pw' }))
    const path = `/rest/v0/users/${other.body.id}/authentication_tokens`
    t.equal((await server.json(path, jsonBody({}))).status, 403, 'not even an administrator creates them for others')
    t.equal((await server.json(path)).status, 403)
    const own = await server.json<{ token: Token }>(path, { ...jsonBody({}), auth: basic('other@example.org', 'pw') })
    t.equal(own.status, 201, 'any user may create a token for themselves')
    t.equal((await server.json(tokensPath, { auth: basic('other@example.org', 'pw') })).status, 403)
  })

  t.test('a revoked token answers 401 from the next request on', async (t) => {
    const victim = await server.json<{ token: Token }>(tokensPath, jsonBody({}))
    const headers = { cookie: `authenticationToken=${victim.body.token.id}` }
    t.equal((await server.request('/rest/v0/users', { headers })).status, 200)
    const revoke = await server.request(`${tokensPath}/${victim.body.token.identifier}`, { method: 'DELETE' })
    t.equal(revoke.status, 204)
    t.equal((await server.request('/rest/v0/users', { headers })).status, 401)
    const again = await server.json(`${tokensPath}/${victim.body.token.identifier}`, { method: 'DELETE' })
    t.equal(again.status, 404)
  })

  t.test('an expired token answers 401 (injected clock, no sleeping)', async (t) => {
    const short = await server.json<{ token: Token }>(tokensPath, jsonBody({ expiresIn: '2 minutes' }))
    const headers = { cookie: `authenticationToken=${short.body.token.id}` }
    server.clock.advance(119_000)
    t.equal((await server.request('/rest/v0/users', { headers })).status, 200)
    server.clock.advance(1_000)
    const expired = await server.json('/rest/v0/users', { headers })
    t.equal(expired.status, 401)
    t.same(expired.body, { error: 'invalid credentials', code: 'INVALID_CREDENTIALS' })
    t.notOk((await server.json<Array<{ identifier: string }>>(tokensPath)).body.some((x) => x.identifier === short.body.token.identifier))
  })

  t.test('the cookie is found among others, under either name, spaced or percent-encoded; the first one counts', async (t) => {
    const escaped = [...token.id].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')
    for (const header of [
      `theme=dark; authenticationToken=${token.id}; lang=fr`,
      `token=${token.id}`,
      `  authenticationToken = ${token.id} ;theme=dark`,
      `authenticationToken=${escaped}`,
      `authenticationToken=${token.id}; authenticationToken=not-a-token`,
    ]) {
      t.equal((await server.request('/rest/v0/users', { headers: { cookie: header } })).status, 200, header)
    }
  })

  t.test('a cookie naming no known token, or none of the two names, is refused; nothing is created', async (t) => {
    const before = (await server.json<string[]>(tokensPath)).body
    for (const header of [`authenticationToken=not-a-token; token=${token.id}`, `AuthenticationToken=${token.id}`, `authenticationtoken=${token.id}`, 'authenticationToken=%zz', 'authenticationToken=']) {
      const { status, body } = await server.json(tokensPath, { ...jsonBody({}), headers: { cookie: header, 'content-type': 'application/json' } })
      t.equal(status, 401, header)
      t.same(body, { error: 'invalid credentials', code: 'INVALID_CREDENTIALS' }, header)
    }
    t.same((await server.json<string[]>(tokensPath)).body, before)
  })

  t.test('a Bearer header works like the cookie', async (t) => {
    const bearer = await server.json<{ token: Token }>(tokensPath, jsonBody({}))
    t.equal((await server.request('/rest/v0/users', { headers: { authorization: `Bearer ${bearer.body.token.id}` } })).status, 200)
  })
})

t.test('restart keeps users, tokens and passwords', async (t) => {
  const first = await startServer()
  const created = await first.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'keep@example.org', password: 'kept' }))
  const adminId = ((await first.json<Array<{ id: string }>>('/rest/v0/users?fields=id&filter=permission:admin')).body[0] as { id: string }).id
  const token = (await first.json<{ token: Token }>(`/rest/v0/users/${adminId}/authentication_tokens`, jsonBody({}))).body.token
  await first.close({ keepData: true })

  const second = await startServer({ dataDir: first.dataDir, clock: first.clock, app: { adminPassword: 'ignored-now' } })
  t.teardown(async () => {
    await second.close()
    const { rmSync } = await import('node:fs')
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  t.equal((await second.json(`/rest/v0/users/${created.body.id}`)).status, 200)
  t.equal((await second.request('/rest/v0/users', { headers: { cookie: `authenticationToken=${token.id}` } })).status, 200)
  t.equal((await second.request('/rest/v0/users/me', { auth: basic('keep@example.org', 'kept') })).status, 307)
  t.equal((await second.request('/rest/v0/users', { auth: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })).status, 200, 'the first admin password still works')
  t.equal((await second.json<string[]>('/rest/v0/users')).body.length, 2, 'no second administrator was created')
})
