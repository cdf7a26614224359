import t from 'tap'
import { basic, jsonBody, startLabServer, startServer } from '../helpers/server.js'

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

t.test('DELETE /vm-templates/{id} destroys a custom template with its drives', async (t) => {
  const { server, lab } = await startLabServer()
  t.teardown(() => server.close())
  const staging = [...lab.objectsOfType('VM')].find((record) => record['name_label'] === 'staging-app')
  if (staging === undefined) throw new Error('the lab has no staging-app VM')
  // XAPI's VM.set_is_a_template, which the REST API does not offer: the lab gets a custom template.
  lab.applyChanges([{ kind: 'update', object: { ...staging, type: 'VM-template', isDefaultTemplate: false } }])
  await server.app.driver.waitFor(staging.id, { until: (record) => record.type === 'VM-template' })
  const vbds = (await server.json<Obj>(`/rest/v0/vm-templates/${staging.id}`)).body['$VBDs'] as string[]
  t.ok(vbds.length > 0, 'the template has drives')

  t.equal((await server.request(`/rest/v0/vm-templates/${staging.id}?sync=true`, { method: 'DELETE' })).status, 204)
  t.equal((await server.request(`/rest/v0/vm-templates/${staging.id}`)).status, 404)
  for (const vbd of vbds) t.equal((await server.request(`/rest/v0/vbds/${vbd}`)).status, 404, 'its drives went with it')
})
