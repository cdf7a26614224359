import t from 'tap'
import { basic, jsonBody, startServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

t.test('DELETE /vm-templates/{id}: a default template refuses, an unknown id is 404, a user without the privilege 403, nothing changed', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const templates = (await server.json<string[]>('/rest/v0/vm-templates')).body
  const id = templates[0]?.split('/').pop()
  if (id === undefined) throw new Error('the lab has no template')
  t.equal((await server.json<Obj>(`/rest/v0/vm-templates/${id}`)).body['isDefaultTemplate'], true)

  const refused = await server.json<Obj>(`/rest/v0/vm-templates/${id}?sync=true`, { method: 'DELETE' })
  t.match(refused, { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'isDefaultTemplate', actual: true, expected: false } } })

  t.equal((await server.request('/rest/v0/vm-templates/no-such-template', { method: 'DELETE' })).status, 404)

  await server.json('/rest/v0/users', jsonBody({ email: 'viewer@example.org', password: 'a-user-password' }))
  const forbidden = await server.request(`/rest/v0/vm-templates/${id}`, { method: 'DELETE', auth: basic('viewer@example.org', 'a-user-password') })
  t.equal(forbidden.status, 403)

  t.same((await server.json<string[]>('/rest/v0/vm-templates')).body, templates, 'every template is still there')
})
