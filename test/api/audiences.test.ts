import t, { type Test } from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { openStream, sseEvents, type OpenStream } from '../helpers/streams.js'

type Obj = Record<string, unknown>
const PASSWORD = 'audience-user-password'
const INIT = /^event: init\ndata: \{"id":"([0-9a-f-]{36})"\}\n\n/

async function role(server: TestServer, name: string, selector: string): Promise<string> {
  const created = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name }))
  await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: created.body.id, resource: 'vm', action: 'read', effect: 'allow', selector }))
  return created.body.id
}

async function user(server: TestServer, email: string, roleId: string): Promise<{ id: string; auth: string }> {
  const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: PASSWORD }))
  await server.request(`/rest/v0/acl-roles/${roleId}/users/${created.body.id}`, { method: 'PUT' })
  return { id: created.body.id, auth: basic(email, PASSWORD) }
}

/** An event stream subscribed to VM names. */
async function watchVms(t: Test, server: TestServer, auth: string): Promise<OpenStream> {
  const stream = await openStream(`${server.url}/rest/v0/events`, { authorization: auth })
  t.teardown(() => stream.close())
  const id = (INIT.exec(await stream.until((text) => INIT.test(text))) as RegExpExecArray)[1] as string
  const subscribed = await server.json(`/rest/v0/events/${id}/subscriptions`, { ...jsonBody({ collection: 'VM', fields: ['name_label'] }), auth })
  t.equal(subscribed.status, 201)
  return stream
}

const names = (stream: OpenStream): unknown[] =>
  sseEvents(stream.text())
    .filter((event) => event.event === 'update')
    .map((event) => (event.data as Obj)['name_label'])

async function audiences(server: TestServer): Promise<number> {
  const text = await (await server.request('/metrics')).text()
  const line = /^keel_event_audiences\{collection="VM"\} (\d+)$/m.exec(text)
  return line === null ? 0 : Number(line[1])
}

t.test('users with the same privileges share one audience; each sees what they may; a role change moves a user at once', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const tagged = await role(server, 'tagged vms', 'tags:zqshared')
  // The same privilege in another role: what decides visibility is the same.
  const taggedToo = await role(server, 'tagged vms again', 'tags:zqshared')
  const other = await role(server, 'other vms', 'tags:zqother')
  const ann = await user(server, 'ann@example.net', tagged)
  const bob = await user(server, 'bob@example.net', taggedToo)
  const cat = await user(server, 'cat@example.net', other)
  await server.request(`/rest/v0/vms/${demo.haltedVm}/tags/zqshared`, { method: 'PUT' })
  await server.request(`/rest/v0/vms/${demo.runningVm}/tags/zqother`, { method: 'PUT' })

  const annStream = await watchVms(t, server, ann.auth)
  const bobStream = await watchVms(t, server, bob.auth)
  const catStream = await watchVms(t, server, cat.auth)
  t.equal(await audiences(server), 2, 'ann and bob share one audience, cat has another')

  const rename = (vm: string, name: string) => server.request(`/rest/v0/vms/${vm}`, jsonBody({ nameLabel: name }, 'PATCH'))
  // Each wait is for a change made after the ones the stream must not get: events come in order.
  await rename(demo.runningVm, 'other-1')
  await rename(demo.haltedVm, 'shared-1')
  await rename(demo.runningVm, 'other-2')
  for (const stream of [annStream, bobStream]) await stream.until((text) => text.includes('shared-1'))
  await catStream.until((text) => text.includes('other-2'))
  t.same(names(bobStream), ['shared-1'])
  t.same(names(catStream), ['other-1', 'other-2'])

  await server.request(`/rest/v0/acl-roles/${other}/users/${bob.id}`, { method: 'PUT' })
  await server.request(`/rest/v0/acl-roles/${taggedToo}/users/${bob.id}`, { method: 'DELETE' })
  await rename(demo.haltedVm, 'shared-3')
  await rename(demo.runningVm, 'other-3')
  await rename(demo.haltedVm, 'shared-4')
  await bobStream.until((text) => text.includes('other-3'))
  await annStream.until((text) => text.includes('shared-4'))
  t.same(names(bobStream).slice(0, 2), ['shared-1', 'other-3'], 'bob sees what cat sees from the change on')
  t.same(names(annStream), ['shared-1', 'shared-3', 'shared-4'])
  t.equal(await audiences(server), 2, 'bob joined cat’s audience')
})
