import t from 'tap'
import { rmSync } from 'node:fs'
import { demoIds, type DemoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const PASSWORD = 'a-user-password'

interface Fixture {
  readonly server: TestServer
  readonly demo: DemoIds
  user(email: string): Promise<{ id: string; auth: string }>
  role(name: string, privileges: Array<{ resource: string; action: string; effect?: 'allow' | 'deny'; selector?: string }>): Promise<string>
}

async function fixture(server: TestServer): Promise<Fixture> {
  const demo = await demoIds(server)
  return {
    server,
    demo,
    async user(email) {
      const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: PASSWORD }))
      if (created.status !== 201) throw new Error(`user ${email}: ${created.status}`)
      return { id: created.body.id, auth: basic(email, PASSWORD) }
    },
    async role(name, privileges) {
      const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name }))
      if (role.status !== 201) throw new Error(`role ${name}: ${role.status}`)
      for (const privilege of privileges) {
        const made = await server.json('/rest/v0/acl-privileges', jsonBody({ effect: 'allow', ...privilege, roleId: role.body.id }))
        if (made.status !== 201) throw new Error(`privilege ${JSON.stringify(privilege)}: ${made.status} ${JSON.stringify(made.body)}`)
      }
      return role.body.id
    },
  }
}

const refused = (missingPrivileges: Obj[]): Obj => ({ error: 'not enough privileges', code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges } })

t.test('templates: eight, random ids, stable roleTemplateId, reconciled at restart, immutable', async (t) => {
  const first = await startServer()
  const templates = (await first.json<Obj[]>('/rest/v0/acl-roles?fields=id,name,isTemplate,roleTemplateId,userIds&filter=isTemplate?')).body
  t.equal(templates.length, 8)
  t.same(templates.map((role) => role['roleTemplateId']).sort(), [1, 2, 3, 4, 5, 6, 7, 8])
  for (const role of templates) {
    t.match(role['id'], /^[0-9a-f-]{36}$/)
    t.equal(role['isTemplate'], true)
    t.notOk('userIds' in role, 'templates have no assignments')
  }
  const readOnly = templates.find((role) => role['roleTemplateId'] === 1) as Obj
  const privileges = (await first.json<Obj[]>(`/rest/v0/acl-roles/${String(readOnly['id'])}/privileges?fields=resource,action,effect`)).body
  t.equal(privileges.length, 37)
  t.ok(privileges.every((privilege) => privilege['action'] === 'read' && privilege['effect'] === 'allow'))

  const id = String(readOnly['id'])
  const { id: userId } = await (await fixture(first)).user('tpl@example.net')
  const forbidden = (operation: string): Obj => ({
    error: `forbidden operation: ${operation}`,
    code: 'FORBIDDEN',
    data: { operation, reason: 'role is a template' },
  })
  const attempts: Array<[string, RequestInit, string]> = [
    [`/rest/v0/acl-roles/${id}`, jsonBody({ name: 'mine' }, 'PATCH'), 'update ACL V2 role'],
    [`/rest/v0/acl-roles/${id}`, { method: 'DELETE' }, 'delete ACL V2 role'],
    ['/rest/v0/acl-privileges', jsonBody({ roleId: id, resource: 'vm', action: 'start', effect: 'allow' }), 'create ACL V2 privilege'],
    [`/rest/v0/acl-roles/${id}/users/${userId}`, { method: 'PUT' }, 'attach ACL V2 role to user'],
    [`/rest/v0/acl-privileges/${String(privileges[0]?.['href']).split('/').pop()}`, { method: 'DELETE' }, 'delete ACL V2 privilege'],
  ]
  for (const [path, init, operation] of attempts) {
    const { status, body } = await first.json(path, init)
    t.equal(status, 403, operation)
    t.same(body, forbidden(operation))
  }
  t.equal((await first.json<Obj[]>(`/rest/v0/acl-roles/${id}/privileges`)).body.length, 37, 'nothing changed')

  await first.close({ keepData: true })
  const second = await startServer({ dataDir: first.dataDir })
  t.teardown(async () => {
    await second.close()
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const again = (await second.json<Obj[]>('/rest/v0/acl-roles?fields=id,roleTemplateId&filter=isTemplate?')).body
  t.same(
    again.map((role) => role['id']).sort(),
    templates.map((role) => role['id']).sort(),
    'a restart keeps the template ids',
  )
})

t.test('roles and privileges: create, read, update, delete, copy, assignments, with their statuses', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const f = await fixture(server)

  const created = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'operators', description: 'ops' }))
  t.equal(created.status, 201)
  const roleId = created.body.id
  t.equal(created.response.headers.get('location'), `/rest/v0/acl-roles/${roleId}`)
  t.same((await server.json(`/rest/v0/acl-roles/${roleId}`)).body, {
    id: roleId,
    type: 'acl-role',
    name: 'operators',
    description: 'ops',
    privilegeIds: [],
    userIds: [],
    groupIds: [],
  })
  t.equal((await server.json(`/rest/v0/acl-roles/${roleId}`, jsonBody({ description: null }, 'PATCH'))).status, 204)
  t.notOk('description' in ((await server.json<Obj>(`/rest/v0/acl-roles/${roleId}`)).body), 'null removes the description')

  const bad = await server.json('/rest/v0/acl-roles', jsonBody({ name: '' }))
  t.equal(bad.status, 422)
  t.match(bad.body, { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.name' }] } })
  const missing = await server.json('/rest/v0/acl-roles/nope')
  t.same(missing.body, { error: 'no such acl-role nope', code: 'NO_SUCH_OBJECT', data: { id: 'nope', type: 'acl-role' } })

  const privilege = await server.json<{ id: string }>('/rest/v0/acl-privileges', jsonBody({ roleId, resource: 'vm', action: 'shutdown', effect: 'allow', selector: 'tags:prod' }))
  t.equal(privilege.status, 201)
  t.same((await server.json(`/rest/v0/acl-privileges/${privilege.body.id}`)).body, {
    id: privilege.body.id,
    type: 'acl-privilege',
    roleId,
    resource: 'vm',
    action: 'shutdown',
    effect: 'allow',
    selector: 'tags:prod',
  })
  const invalid: Array<[Obj, string]> = [
    [{ roleId, resource: 'vmx', action: 'read', effect: 'allow' }, 'body.resource'],
    [{ roleId, resource: 'vm', action: 'fly', effect: 'allow' }, 'body.action'],
    [{ roleId, resource: 'vm', action: 'read', effect: 'allow', selector: 'name_label:(a' }, 'body.selector'],
    [{ roleId, resource: 'vm', action: 'read', effect: 'maybe' }, 'body.effect'],
  ]
  for (const [body, path] of invalid) {
    const answer = await server.json('/rest/v0/acl-privileges', jsonBody(body))
    t.equal(answer.status, 422, path)
    t.match(answer.body, { code: 'INVALID_PARAMETERS', data: { errors: [{ path }] } })
  }
  const noRole = await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: 'nope', resource: 'vm', action: 'read', effect: 'allow' }))
  t.equal(noRole.status, 404)
  t.same((await server.json<Obj[]>(`/rest/v0/acl-roles/${roleId}/privileges`)).body, [`/rest/v0/acl-privileges/${privilege.body.id}`], 'refused privileges left nothing')
  t.equal((await server.json(`/rest/v0/acl-privileges/${privilege.body.id}`, jsonBody({ selector: null, action: 'start' }, 'PATCH'))).status, 204)
  t.same((await server.json<Obj>(`/rest/v0/acl-privileges/${privilege.body.id}`)).body, {
    id: privilege.body.id,
    type: 'acl-privilege',
    roleId,
    resource: 'vm',
    action: 'start',
    effect: 'allow',
  })

  const { id: userId } = await f.user('assigned@example.net')
  const group = await server.json<{ id: string }>('/rest/v0/groups', jsonBody({ name: 'team' }))
  const userLink = `/rest/v0/acl-roles/${roleId}/users/${userId}`
  t.equal((await server.json(userLink, { method: 'PUT' })).status, 204)
  const twice = await server.json(userLink, { method: 'PUT' })
  t.equal(twice.status, 409)
  t.match(twice.body, { error: 'userRole already exists', code: 'OBJECT_ALREADY_EXISTS' })
  t.equal((await server.json(`/rest/v0/acl-roles/${roleId}/groups/${group.body.id}`, { method: 'PUT' })).status, 204)
  t.equal((await server.json(`/rest/v0/acl-roles/${roleId}/users/nouser`, { method: 'PUT' })).status, 404)
  t.same((await server.json(`/rest/v0/acl-roles/${roleId}/users`)).body, [`/rest/v0/users/${userId}`])
  t.same((await server.json(`/rest/v0/acl-roles/${roleId}/groups`)).body, [`/rest/v0/groups/${group.body.id}`])
  t.same((await server.json(`/rest/v0/groups/${group.body.id}/acl-roles`)).body, [`/rest/v0/acl-roles/${roleId}`])
  t.equal((await server.json(userLink, { method: 'DELETE' })).status, 204)
  const gone = await server.json(userLink, { method: 'DELETE' })
  t.equal(gone.status, 404)
  t.match(gone.body, { error: `no such userRole userId:${userId} and roleId:${roleId}`, code: 'NO_SUCH_OBJECT' })

  const asyncCopy = await server.json<{ taskId: string }>(`/rest/v0/acl-roles/${roleId}/actions/copy`, jsonBody({ name: 'copied' }))
  t.equal(asyncCopy.status, 202)
  const task = await server.json<Obj>(`/rest/v0/tasks/${asyncCopy.body.taskId}?wait=true`)
  t.match(task.body, { status: 'success', result: { id: String } })
  const template = (await server.json<Obj[]>('/rest/v0/acl-roles?fields=id&filter=roleTemplateId:5')).body[0] as Obj
  const syncCopy = await server.json<{ id: string }>(`/rest/v0/acl-roles/${String(template['id'])}/actions/copy?sync=true`, jsonBody({}))
  t.equal(syncCopy.status, 201)
  t.equal(syncCopy.response.headers.get('location'), `/rest/v0/acl-roles/${syncCopy.body.id}`)
  const copied = (await server.json<Obj>(`/rest/v0/acl-roles/${syncCopy.body.id}`)).body
  t.match(copied, { name: 'VMs administrator', userIds: [], groupIds: [] })
  t.equal((copied['privilegeIds'] as string[]).length, 2, 'with the template privileges')
  t.notOk('isTemplate' in (await server.json<Obj>(`/rest/v0/acl-roles/${syncCopy.body.id}`)).body, 'a copy is an ordinary role')
  t.equal((await server.json(`/rest/v0/acl-roles/${syncCopy.body.id}/users/${userId}`, { method: 'PUT' })).status, 204, 'copies are assignable')

  t.equal((await server.json(`/rest/v0/acl-roles/${roleId}`, { method: 'DELETE' })).status, 204)
  t.equal((await server.json(`/rest/v0/acl-privileges/${privilege.body.id}`)).status, 404, 'its privileges went with it')
  t.same((await server.json(`/rest/v0/groups/${group.body.id}/acl-roles`)).body, [], 'and its assignments')
})

t.test('enforcement on every route family', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const f = await fixture(server)
  const { demo } = f
  // Tags no demo VM has, not even as a substring: selectors match substrings.
  await server.request(`/rest/v0/vms/${demo.haltedVm}/tags/zqprod`, { method: 'PUT' })
  await server.request(`/rest/v0/vms/${demo.runningVm}/tags/zqprod`, { method: 'PUT' })
  await server.request(`/rest/v0/vms/${demo.runningVm}/tags/zqsecret`, { method: 'PUT' })

  const nobody = await f.user('nobody@example.net')
  const operator = await f.user('operator@example.net')
  const member = await f.user('member@example.net')
  const opsRole = await f.role('prod operators', [
    { resource: 'vm', action: 'read', selector: 'tags:zqprod' },
    { resource: 'vm', action: 'read', effect: 'deny', selector: 'tags:zqsecret' },
    { resource: 'vm', action: 'start', selector: 'tags:zqprod' },
    { resource: 'vm', action: 'shutdown', selector: 'tags:zqprod' },
    { resource: 'vm', action: 'update:nameLabel', selector: 'tags:zqprod' },
    { resource: 'vm', action: 'update:tags', selector: 'tags:zqprod' },
    { resource: 'host', action: 'read' },
    { resource: 'task', action: 'read' },
  ])
  await server.request(`/rest/v0/acl-roles/${opsRole}/users/${operator.id}`, { method: 'PUT' })
  const group = await server.json<{ id: string }>('/rest/v0/groups', jsonBody({ name: 'readers' }))
  await server.request(`/rest/v0/groups/${group.body.id}/users/${member.id}`, { method: 'PUT' })
  const readers = await f.role('readers', [{ resource: 'vm', action: 'read' }])
  await server.request(`/rest/v0/acl-roles/${readers}/groups/${group.body.id}`, { method: 'PUT' })

  const as = (user: { auth: string }) => (path: string, init: RequestInit = {}) => server.json<Obj>(path, { ...init, auth: user.auth })
  const list = async (user: { auth: string }, path: string): Promise<string[]> => (await server.json<string[]>(path, { auth: user.auth })).body

  t.test('listings show only what the caller may read; limit counts visible objects', async (t) => {
    t.same(await list(nobody, '/rest/v0/vms'), [], 'no role, no objects, still 200')
    t.same(await list(operator, '/rest/v0/vms'), [`/rest/v0/vms/${demo.haltedVm}`], 'tags:prod minus the denied secret one')
    t.same(await list(operator, '/rest/v0/vms?limit=1'), [`/rest/v0/vms/${demo.haltedVm}`])
    t.equal((await list(member, '/rest/v0/vms')).length, 12, 'through the group')
    t.equal((await list(member, '/rest/v0/vms?limit=3')).length, 3)
    t.equal((await server.json<string[]>('/rest/v0/vms')).body.length, 12, 'the administrator sees all')
    t.same(await list(nobody, '/rest/v0/hosts'), [])
    t.same(await list(nobody, '/rest/v0/srs'), [], 'a listing never refuses: it shows nothing')
  })

  t.test('repeated listings are cached per caller, never shared', async (t) => {
    for (let i = 0; i < 3; i++) {
      t.equal((await list(member, '/rest/v0/vms?fields=name_label')).length, 12)
      t.equal((await list(operator, '/rest/v0/vms?fields=name_label')).length, 1)
      t.equal((await server.json<string[]>('/rest/v0/vms?fields=name_label')).body.length, 12)
    }
  })

  t.test('single objects: 200 when readable, 403 naming the object otherwise, 404 when missing', async (t) => {
    t.equal((await as(operator)(`/rest/v0/vms/${demo.haltedVm}`)).status, 200)
    const secret = await as(operator)(`/rest/v0/vms/${demo.runningVm}`)
    t.equal(secret.status, 403, 'deny wins')
    t.same(secret.body, refused([{ resource: 'vm', action: 'read', objectId: demo.runningVm }]))
    t.equal((await as(operator)('/rest/v0/vms/nope')).status, 404)
    t.equal((await as(nobody)(`/rest/v0/users/${nobody.id}`)).status, 200, 'your own user record')
    t.equal((await as(nobody)(`/rest/v0/users/${operator.id}`)).status, 403)
  })

  t.test('actions: on the object, and on the objects the body names', async (t) => {
    const start = await as(operator)(`/rest/v0/vms/${demo.haltedVm}/actions/start?sync=true`, { method: 'POST' })
    t.equal(start.status, 204)
    const onHost = await as(operator)(`/rest/v0/vms/${demo.haltedVm}/actions/clean_shutdown?sync=true`, { method: 'POST' })
    t.equal(onHost.status, 204, 'shutdown covers shutdown:clean')
    const named = await as(operator)(`/rest/v0/vms/${demo.haltedVm}/actions/start?sync=true`, jsonBody({ hostId: demo.host2 }))
    t.equal(named.status, 403)
    t.same(named.body, refused([{ resource: 'host', action: 'allow-vm', objectId: demo.host2 }]))
    t.equal((await server.json<Obj>(`/rest/v0/vms/${demo.haltedVm}`)).body['power_state'], 'Halted', 'nothing started')
    const other = await as(operator)(`/rest/v0/vms/${demo.localHaltedVm}/actions/start?sync=true`, { method: 'POST' })
    t.equal(other.status, 403)
    t.same(other.body, refused([{ resource: 'vm', action: 'start', objectId: demo.localHaltedVm }]))
    const notGranted = await as(operator)(`/rest/v0/vms/${demo.haltedVm}/actions/snapshot?sync=true`, jsonBody({}))
    t.equal(notGranted.status, 403)
    t.same(notGranted.body, refused([{ resource: 'vm', action: 'snapshot' }]))
  })

  t.test('PATCH needs update:<field> for each field sent; tags need update:tags', async (t) => {
    t.equal((await as(operator)(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: 'renamed' }, 'PATCH'))).status, 204)
    const two = await as(operator)(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: 'again', nameDescription: 'x' }, 'PATCH'))
    t.equal(two.status, 403)
    t.same(two.body, refused([{ resource: 'vm', action: 'update:nameDescription', objectId: demo.haltedVm }]))
    t.equal((await server.json<Obj>(`/rest/v0/vms/${demo.haltedVm}`)).body['name_label'], 'renamed', 'all or nothing')
    t.equal((await as(operator)(`/rest/v0/vms/${demo.haltedVm}/tags/extra`, { method: 'PUT' })).status, 204)
    t.equal((await as(member)(`/rest/v0/vms/${demo.haltedVm}/tags/extra`, { method: 'DELETE' })).status, 403)
    t.equal((await as(operator)(`/rest/v0/vms/${demo.haltedVm}`, { method: 'DELETE' })).status, 403)
    t.equal((await server.json(`/rest/v0/vms/${demo.haltedVm}`)).status, 200, 'not deleted')
  })

  t.test('a tag change changes scope on the next request', async (t) => {
    t.equal((await as(operator)(`/rest/v0/vms/${demo.localHaltedVm}`)).status, 403)
    await server.request(`/rest/v0/vms/${demo.localHaltedVm}/tags/zqprod`, { method: 'PUT' })
    t.equal((await as(operator)(`/rest/v0/vms/${demo.localHaltedVm}`)).status, 200)
    t.ok((await list(operator, '/rest/v0/vms')).includes(`/rest/v0/vms/${demo.localHaltedVm}`))
    await server.request(`/rest/v0/vms/${demo.localHaltedVm}/tags/zqprod`, { method: 'DELETE' })
    t.equal((await as(operator)(`/rest/v0/vms/${demo.localHaltedVm}`)).status, 403)
  })

  t.test('role, privilege, assignment and membership changes take effect on the next request', async (t) => {
    const temp = await f.user('temp@example.net')
    t.same(await list(temp, '/rest/v0/vms'), [])
    await server.request(`/rest/v0/groups/${group.body.id}/users/${temp.id}`, { method: 'PUT' })
    t.equal((await list(temp, '/rest/v0/vms')).length, 12, 'joined the group')
    const deny = await server.json<{ id: string }>('/rest/v0/acl-privileges', jsonBody({ roleId: readers, resource: 'vm', action: 'read', effect: 'deny', selector: 'power_state:Running' }))
    t.ok((await list(temp, '/rest/v0/vms')).length < 12, 'a new deny applies')
    await server.request(`/rest/v0/acl-privileges/${deny.body.id}`, { method: 'DELETE' })
    t.equal((await list(temp, '/rest/v0/vms')).length, 12)
    await server.request(`/rest/v0/groups/${group.body.id}/users/${temp.id}`, { method: 'DELETE' })
    t.same(await list(temp, '/rest/v0/vms'), [], 'left the group')
  })

  t.test('administrator-only routes stay administrator-only', async (t) => {
    const audit = await as(operator)('/rest/v0/acl-audit')
    t.equal(audit.status, 403)
    t.match(audit.body, { code: 'FORBIDDEN' })
    t.equal((await as(nobody)(`/rest/v0/users/${operator.id}`, jsonBody({ name: 'x' }, 'PATCH'))).status, 403)
  })

  t.test('tasks: a reader of tasks sees them', async (t) => {
    t.ok((await list(operator, '/rest/v0/tasks')).length > 0)
    t.same(await list(nobody, '/rest/v0/tasks'), [])
  })

  t.test('self endpoints need no privilege', async (t) => {
    const me = await server.request('/rest/v0/users/me/acl-privileges', { auth: operator.auth })
    t.equal(me.status, 307)
    t.equal(me.headers.get('location'), `/rest/v0/users/${operator.id}/acl-privileges`)
    const own = (await server.json<Obj[]>(`/rest/v0/users/${operator.id}/acl-privileges?fields=resource,action`, { auth: operator.auth })).body
    t.equal(own.length, 8)
    t.equal((await as(nobody)(`/rest/v0/users/${operator.id}/acl-privileges`)).status, 403)
  })

  t.test('access review', async (t) => {
    const check = (user: { auth: string } | undefined, body: Obj) => server.json<Obj>('/rest/v0/acl-check', { ...jsonBody(body), ...(user ? { auth: user.auth } : {}) })
    const mine = await check(operator, { resource: 'vm', action: 'start', objectId: demo.haltedVm })
    t.equal(mine.status, 200)
    t.match(mine.body, { allowed: true, matched: [String], denying: [] })
    const secret = await check(operator, { resource: 'vm', action: 'read', objectId: demo.runningVm })
    t.match(secret.body, { allowed: false, denying: [String] })
    t.equal((await check(undefined, { resource: 'vm', action: 'read', objectId: demo.runningVm, userId: operator.id })).body['allowed'], false)
    t.equal((await check(operator, { resource: 'vm', action: 'read', userId: member.id })).status, 403, 'only administrators review others')
    t.equal((await check(operator, { resource: 'vm', action: 'read', objectId: 'nope' })).status, 404)
  })
})

t.test('no escalation: a role manager grants and assigns only what they hold', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const f = await fixture(server)
  const manager = await f.user('manager@example.net')
  const managerRole = await f.role('role managers', [
    { resource: 'acl-role', action: '*' },
    { resource: 'acl-privilege', action: '*' },
    { resource: 'vm', action: 'read' },
    { resource: 'user', action: 'read' },
  ])
  await server.request(`/rest/v0/acl-roles/${managerRole}/users/${manager.id}`, { method: 'PUT' })
  const other = await f.user('other@example.net')
  const as = { auth: manager.auth }

  const role = await server.json<{ id: string }>('/rest/v0/acl-roles', { ...jsonBody({ name: 'delegated' }), ...as })
  t.equal(role.status, 201)
  const held = await server.json('/rest/v0/acl-privileges', { ...jsonBody({ roleId: role.body.id, resource: 'vm', action: 'read', effect: 'allow' }), ...as })
  t.equal(held.status, 201, 'what they hold')
  const more = await server.json('/rest/v0/acl-privileges', { ...jsonBody({ roleId: role.body.id, resource: 'vm', action: 'start', effect: 'allow' }), ...as })
  t.equal(more.status, 403)
  t.same(more.body, refused([{ resource: 'vm', action: 'start' }]))
  const deny = await server.json('/rest/v0/acl-privileges', { ...jsonBody({ roleId: role.body.id, resource: 'vm', action: 'start', effect: 'deny' }), ...as })
  t.equal(deny.status, 201, 'a deny gives nothing')
  const admin = await server.json(`/rest/v0/users/${other.id}`, { ...jsonBody({ permission: 'admin' }, 'PATCH'), ...as })
  t.equal(admin.status, 403, 'no administrator made by a non-administrator')

  const template = (await server.json<Obj[]>('/rest/v0/acl-roles?fields=id&filter=roleTemplateId:7')).body[0] as Obj
  const copy = await server.json<{ id: string }>(`/rest/v0/acl-roles/${String(template['id'])}/actions/copy?sync=true`, jsonBody({ name: 'full' }))
  const assign = await server.json(`/rest/v0/acl-roles/${copy.body.id}/users/${other.id}`, { method: 'PUT', ...as })
  t.equal(assign.status, 403, 'cannot assign a role giving more than they hold')
  const missing = (assign.body as { data: { missingPrivileges: Obj[] } }).data.missingPrivileges
  t.equal(missing.length, 35, 'every resource but the two they hold whole')
  t.ok(missing.some((privilege) => privilege['resource'] === 'sr' && privilege['action'] === '*'))
  t.same((await server.json(`/rest/v0/acl-roles/${copy.body.id}/users`)).body, [], 'not assigned')
  t.equal((await server.json(`/rest/v0/acl-roles/${role.body.id}/users/${other.id}`, { method: 'PUT', ...as })).status, 204, 'within their own')

  const audit = await server.json<Obj[]>('/rest/v0/acl-audit?fields=operation,actorId,objectType,before,after')
  t.equal(audit.status, 200)
  const byManager = audit.body.filter((entry) => entry['actorId'] === manager.id)
  t.same(
    byManager.map((entry) => entry['operation']),
    ['create role', 'create privilege', 'create privilege', 'attach role to user'],
    'every change, in order, with who made it',
  )
  t.match(byManager[3], { objectType: 'acl-role', before: { userIds: [] }, after: { userIds: [other.id] } })
  t.equal((await server.json<Obj[]>('/rest/v0/acl-audit?filter=operation:copy')).body.length, 1, 'the collection parameters apply')
})
