import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { openStream } from '../helpers/streams.js'

const PASSWORD = 'stream-credentials-password'
// No periodic sweep could close anything during these tests: closing comes from the change itself.
const config = { restApi: { streamCredentialCheckInterval: 3_600_000 } }

async function newUser(server: TestServer, email: string): Promise<{ id: string; auth: string }> {
  const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: PASSWORD, permission: 'admin' }))
  return { id: created.body.id, auth: basic(email, PASSWORD) }
}

const watchVms = (server: TestServer, headers: Record<string, string>) => openStream(`${server.url}/rest/v0/vms?ndjson=true&watch=true&fields=name_label`, headers)

t.test('a revoked token closes its streams at once', async (t) => {
  const server = await startServer({ config })
  t.teardown(() => server.close())
  const token = (await server.json<{ token: { id: string; identifier: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), redirect: 'follow' })).body.token
  const cookie = `authenticationToken=${token.id}`
  const streams = await Promise.all([watchVms(server, { cookie }), openStream(`${server.url}/rest/v0/events`, { cookie })])
  const me = (await server.json<{ id: string }>('/rest/v0/users/me', { redirect: 'follow' })).body.id
  t.equal((await server.request(`/rest/v0/users/${me}/authentication_tokens/${token.identifier}`, { method: 'DELETE' })).status, 204)
  t.same(await Promise.all(streams.map((stream) => stream.ended)), ['end', 'end'])
})

t.test('a token’s stream closes when it expires, on one timer', async (t) => {
  const server = await startServer({ config })
  t.teardown(() => server.close())
  const token = (await server.json<{ token: { id: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({ expiresIn: '1 hour' }), redirect: 'follow' })).body.token
  server.clock.advance(3_600_000 - 1000)
  const stream = await watchVms(server, { cookie: `authenticationToken=${token.id}` })
  const other = await watchVms(server, { cookie: `authenticationToken=${token.id}` })
  server.clock.advance(2000)
  t.same(await Promise.all([stream.ended, other.ended]), ['end', 'end'])
})

t.test('a password change closes the user’s Basic streams, a demotion or a deletion all of theirs; others stay', async (t) => {
  const server = await startServer({ config })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const changing = await newUser(server, 'changing@example.net')
  const leaving = await newUser(server, 'leaving@example.net')
  const staying = await newUser(server, 'staying@example.net')
  const demoted = await newUser(server, 'demoted@example.net')
  const demotedStream = await watchVms(server, { authorization: demoted.auth })
  const changingStream = await watchVms(server, { authorization: changing.auth })
  const leavingStream = await watchVms(server, { authorization: leaving.auth })
  const stayingStream = await watchVms(server, { authorization: staying.auth })
  t.teardown(() => stayingStream.close())

  const patched = await server.request(`/rest/v0/users/${changing.id}`, jsonBody({ password: 'another-password-entirely' }, 'PATCH'))
  t.equal(patched.status, 204)
  t.equal(await changingStream.ended, 'end', 'closed on the password change')
  t.equal((await server.request(`/rest/v0/users/${leaving.id}`, { method: 'DELETE' })).status, 204)
  t.equal(await leavingStream.ended, 'end', 'closed on the deletion')
  t.equal((await server.request(`/rest/v0/users/${demoted.id}`, jsonBody({ permission: 'none' }, 'PATCH'))).status, 204)
  t.equal(await demotedStream.ended, 'end', 'closed on the demotion')

  await server.request(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: 'still-here' }, 'PATCH'))
  await stayingStream.until((text) => text.includes('still-here'))
  t.pass('another user’s stream carries on')
})
