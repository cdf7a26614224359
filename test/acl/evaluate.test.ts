import t from 'tap'
import { actionsByResource, isGrantableAction, resources } from '../../src/acl/catalogue.js'
import { actionCovers, PrivilegeSet, type Rule } from '../../src/acl/evaluate.js'
import { roleTemplates } from '../../src/acl/templates.js'

let next = 0
const rule = (resource: string, action: string, effect: 'allow' | 'deny' = 'allow', selector?: string): Rule => ({
  id: `p${++next}`,
  resource,
  action,
  effect,
  ...(selector === undefined ? {} : { selector }),
})

const POOL = '8f2c0c6e-3a0b-4f3c-9d8e-4b1f2a3c4d5e'
const vm = (fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: '0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0',
  type: 'VM',
  name_label: 'my-web-1',
  power_state: 'Running',
  tags: ['qa-old', 'prod'],
  $pool: POOL,
  creation: { creator: 'user-7' },
  size: 12,
  ...fields,
})

t.test('action hierarchy: a parent covers its children, never the reverse nor a sibling; * covers all', async (t) => {
  const table: Array<[granted: string, requested: string, covered: boolean]> = [
    ['shutdown', 'shutdown:clean', true],
    ['shutdown', 'shutdown:hard', true],
    ['shutdown:clean', 'shutdown:clean', true],
    ['shutdown:clean', 'shutdown:hard', false],
    ['shutdown:clean', 'shutdown', false],
    ['update', 'update:tags', true],
    ['update:tags', 'update', false],
    ['*', 'reboot:hard', true],
    ['*', 'read', true],
    ['read', 'reboot', false],
    ['shut', 'shutdown:clean', false],
  ]
  for (const [granted, requested, covered] of table) t.equal(actionCovers(granted, requested), covered, `${granted} → ${requested}`)
})

t.test('deny by default; union of rules; deny wins over allow', async (t) => {
  t.equal(new PrivilegeSet([]).allows('vm', 'read', vm()), false, 'no privilege, no access')
  const set = new PrivilegeSet([rule('vm', 'read'), rule('vm', 'start'), rule('host', 'read')])
  t.equal(set.allows('vm', 'read', vm()), true)
  t.equal(set.allows('vm', 'start', vm()), true)
  t.equal(set.allows('vm', 'delete', vm()), false)
  t.equal(set.allows('sr', 'read', {}), false, 'resources have no wildcard')
  const denied = new PrivilegeSet([rule('vm', '*'), rule('vm', 'delete', 'deny')])
  t.equal(denied.allows('vm', 'delete', vm()), false)
  t.equal(denied.allows('vm', 'start', vm()), true)
  const decision = denied.decide('vm', 'delete', vm())
  t.equal(decision.allowed, false)
  t.equal(decision.matched.length, 2)
  t.equal(decision.denying.length, 1)
})

t.test('selectors from the notes, evaluated on the live object', async (t) => {
  const cases: Array<[selector: string, object: Record<string, unknown>, matches: boolean]> = [
    [`id:${String(vm()['id'])}`, vm(), true],
    ['id:0b1c2d3e', vm(), true],
    [`$pool:${POOL}`, vm(), true],
    [`$pool:${POOL}`, vm({ $pool: 'other' }), false],
    ['tags:qa', vm(), true],
    ['tags:"qa"', vm(), true],
    ['tags:/^qa$/', vm(), false],
    ['tags:/^prod$/', vm(), true],
    ['power_state:Running', vm(), true],
    ['power_state:running', vm(), true],
    ['power_state:Running', vm({ power_state: 'Halted' }), false],
    ['creation:creator:user-7', vm(), true],
    ['creation:creator:user-8', vm(), false],
    ['size:12', vm(), true],
    ['size:1', vm(), false],
    ['name_label:web*', vm(), true],
    ['name_label:/^web/', vm(), false],
    ['missing:x', vm(), false],
    ['!tags:prod', vm(), false],
    ['|(power_state:Halted tags:prod)', vm(), true],
    ['', vm(), true],
  ]
  for (const [selector, object, matches] of cases) {
    const set = new PrivilegeSet([rule('vm', 'read', 'allow', selector)])
    t.equal(set.allows('vm', 'read', object), matches, JSON.stringify(selector))
  }
})

t.test('a changed object changes scope at once', async (t) => {
  const set = new PrivilegeSet([rule('vm', 'read', 'allow', 'tags:prod')])
  t.equal(set.allows('vm', 'read', vm({ tags: [] })), false)
  t.equal(set.allows('vm', 'read', vm({ tags: ['prod'] })), true)
})

t.test('a selector privilege does not apply without an object; an unscoped one does', async (t) => {
  t.equal(new PrivilegeSet([rule('vm', 'read', 'allow', 'tags:prod')]).allows('vm', 'read'), false)
  t.equal(new PrivilegeSet([rule('vm', 'read')]).allows('vm', 'read'), true)
})

t.test('mayAllow: some privilege could allow the action or one of its children', async (t) => {
  const set = new PrivilegeSet([rule('vm', 'update:nameLabel', 'allow', 'tags:x'), rule('host', 'read', 'deny')])
  t.equal(set.mayAllow('vm', 'update'), true)
  t.equal(set.mayAllow('vm', 'update:nameLabel'), true)
  t.equal(set.mayAllow('vm', 'start'), false)
  t.equal(set.mayAllow('host', 'read'), false, 'a deny allows nothing')
})

t.test('the catalogue is the spec (plus the backup management Keel adds): 37 resources, exact actions, parents and * grantable', async (t) => {
  t.equal(resources.length, 37)
  t.same(actionsByResource['task'], ['read', 'abort', 'delete'])
  t.same(actionsByResource['schedule']?.slice(0, 2), ['read', 'run'], "the spec's actions first; backups add create, delete and update")
  t.equal(actionsByResource['vm']?.length, 16 + 37 + 1, "the spec's actions and Keel's console")
  const table: Array<[string, string, boolean]> = [
    ['vm', 'shutdown:clean', true],
    ['vm', 'shutdown', true],
    ['vm', 'update', true],
    ['vm', '*', true],
    ['vm', 'fly', false],
    ['vm', 'shutdown:soft', false],
    ['vmx', 'read', false],
    ['pif', 'update', true],
    ['acl-privilege', 'update:selector', true],
  ]
  for (const [resource, action, ok] of table) t.equal(isGrantableAction(resource, action), ok, `${resource} ${action}`)
})

t.test('the eight templates are the reference ones', async (t) => {
  t.same(roleTemplates.map((template) => template.roleTemplateId).sort(), [1, 2, 3, 4, 5, 6, 7, 8])
  const sizes = Object.fromEntries(roleTemplates.map((template) => [template.name, template.privileges.length]))
  t.same(sizes, {
    'Read only': 37,
    'VMs power state manager': 7,
    'VMs creator': 6,
    'VMs read only': 1,
    'VMs administrator': 2,
    'Network administrator': 8,
    Administrator: 37,
    'Storage administrator': 7,
  })
  for (const template of roleTemplates) {
    for (const privilege of template.privileges) t.ok(isGrantableAction(privilege.resource, privilege.action), `${template.name}: ${privilege.resource} ${privilege.action}`)
  }
  const readOnly = roleTemplates.find((template) => template.roleTemplateId === 1)
  t.ok(readOnly?.privileges.every((privilege) => privilege.action === 'read'))
  const administrator = roleTemplates.find((template) => template.roleTemplateId === 7)
  t.ok(administrator?.privileges.every((privilege) => privilege.action === '*'))
})
