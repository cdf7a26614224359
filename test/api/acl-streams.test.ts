import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { openLines, openStream, sseEvents } from '../helpers/streams.js'

type Obj = Record<string, unknown>
const PASSWORD = 'stream-user-password'
const INIT = /^event: init\ndata: \{"id":"([0-9a-f-]{36})"\}\n\n/

const tag = (server: TestServer, vm: string, name: string, present: boolean) =>
  server.request(`/rest/v0/vms/${vm}/tags/${name}`, { method: present ? 'PUT' : 'DELETE' })
const rename = (server: TestServer, vm: string, name: string) => server.request(`/rest/v0/vms/${vm}`, jsonBody({ nameLabel: name }, 'PATCH'))

async function scopedUser(server: TestServer, email: string): Promise<{ id: string; auth: string; roleId: string }> {
  const user = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: PASSWORD }))
  const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: `${email} vms` }))
  await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: role.body.id, resource: 'vm', action: 'read', effect: 'allow', selector: 'tags:zqvisible' }))
  await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${user.body.id}`, { method: 'PUT' })
  return { id: user.body.id, auth: basic(email, PASSWORD), roleId: role.body.id }
}

t.test('event streams deliver only what the user may read, judged at each event', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const user = await scopedUser(server, 'sse@example.net')
  await tag(server, demo.haltedVm, 'zqvisible', true)

  const stream = await openStream(`${server.url}/rest/v0/events`, { authorization: user.auth })
  t.teardown(() => stream.close())
  const id = (INIT.exec(await stream.until((text) => INIT.test(text))) as RegExpExecArray)[1] as string
  const subscribe = (collection: string) =>
    server.json<Obj>(`/rest/v0/events/${id}/subscriptions`, { ...jsonBody({ collection, fields: ['name_label'] }), auth: user.auth })

  const hosts = await subscribe('host')
  t.equal(hosts.status, 403, 'a collection the user may read nothing of')
  t.same(hosts.body, { error: 'not enough privileges', code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'host', action: 'read' }] } })
  t.equal((await subscribe('VM')).status, 201)

  await rename(server, demo.runningVm, 'hidden-change')
  await rename(server, demo.haltedVm, 'visible-change')
  await tag(server, demo.haltedVm, 'zqvisible', false)
  await tag(server, demo.runningVm, 'zqvisible', true)
  await stream.until((text) => sseEvents(text).filter((event) => event.event !== 'ping').length >= 4)
  const events = sseEvents(stream.text())
    .filter((event) => event.event !== 'init' && event.event !== 'ping')
    .map((event) => [event.event, (event.data as Obj)['id'] ?? (event.data as Obj)['name_label']])
  t.same(
    events.slice(0, 3),
    [
      ['update', 'visible-change'],
      ['remove', 'visible-change'],
      ['add', 'hidden-change'],
    ],
    'seen, left, then entered as it is now: nothing of the hidden change while it was hidden',
  )

  // Taking the role away applies to the open stream at the next event. A second role lets a
  // marker through after the change that must not be: events come in order, so once the marker
  // is in, that change would be too.
  const markers = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'sse markers' }))
  await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: markers.body.id, resource: 'vm', action: 'read', effect: 'allow', selector: 'name_label:zqmarker' }))
  await server.request(`/rest/v0/acl-roles/${markers.body.id}/users/${user.id}`, { method: 'PUT' })
  await server.request(`/rest/v0/acl-roles/${user.roleId}/users/${user.id}`, { method: 'DELETE' })
  await rename(server, demo.runningVm, 'after-the-role')
  await rename(server, demo.haltedVm, 'zqmarker')
  await stream.until((text) => text.includes('zqmarker'))
  t.notMatch(stream.text(), /after-the-role/)
})

t.test('watch lines follow the same judgement', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const user = await scopedUser(server, 'watch@example.net')
  await tag(server, demo.haltedVm, 'zqvisible', true)
  const lines = await openLines(`${server.url}/rest/v0/vms?ndjson=true&watch=true&fields=name_label`, { authorization: user.auth })
  t.teardown(() => lines.close())
  await rename(server, demo.runningVm, 'hidden-line')
  await rename(server, demo.haltedVm, 'visible-line')
  await tag(server, demo.haltedVm, 'zqvisible', false)
  const values = (await lines.until(2)) as Array<[string, Obj]>
  t.same(values, [
    ['update', { name_label: 'visible-line', href: `/rest/v0/vms/${demo.haltedVm}` }],
    ['remove', { href: `/rest/v0/vms/${demo.haltedVm}` }],
  ], 'seen, then removed once no longer readable')
  t.notMatch(JSON.stringify(values), /hidden-line/)
})
