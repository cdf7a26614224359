import t from 'tap'
import { PrivilegeSet, type Rule } from '../../src/acl/evaluate.js'
import { Visibilities } from '../../src/acl/visibility.js'
import { audienceOf, SharedDashboards, type Audience } from '../../src/api/shared-dashboards.js'
import type { Principal } from '../../src/auth/principal.js'

const user = (rules: Rule[]): Principal => ({ id: 'u', email: 'u@example.net', permission: 'none', via: 'token', privileges: new PrivilegeSet(rules) })
const rule = (resource: string, selector: string | undefined, effect: 'allow' | 'deny' = 'allow'): Rule => ({ id: `${resource}${selector ?? ''}`, resource, action: 'read', effect, selector })

t.test('audienceOf: callers with the same read privileges share one audience', async (t) => {
  const visibilities = new Visibilities()
  const resources = ['vm', 'host']
  const admin = audienceOf({ id: 'a', email: 'a@example.net', permission: 'admin', via: 'token' }, resources, visibilities)
  t.equal(admin.key, '*')
  t.equal(admin.visible('vm'), undefined, 'an administrator reads everything')

  const prod = audienceOf(user([rule('vm', 'tags:prod')]), resources, visibilities)
  const twin = audienceOf(user([rule('vm', 'tags:prod'), { ...rule('vm', 'tags:prod'), id: 'again', action: '*' }, rule('network', undefined)]), resources, visibilities)
  t.equal(twin.key, prod.key, 'duplicates and resources the dashboard does not read make no difference')
  t.not(audienceOf(user([rule('vm', 'tags:dev')]), resources, visibilities).key, prod.key)
  t.not(audienceOf(user([rule('vm', 'tags:prod'), rule('vm', 'name_label:x', 'deny')]), resources, visibilities).key, prod.key, 'a deny is part of it')
  t.not(audienceOf(user([rule('vm', 'tags:prod'), rule('host', undefined)]), resources, visibilities).key, prod.key)

  t.equal(prod.visible('vm')?.({ tags: ['prod'] }), true)
  t.equal(prod.visible('vm')?.({ tags: ['dev'] }), false)
  t.equal(prod.visible('host')?.({ id: 'h' }), false, 'no privilege on a resource: nothing of it')
  t.equal(prod.visible('network')?.({ id: 'n' }), false, 'a resource not asked for: nothing of it')
})

t.test('SharedDashboards: one computation per audience and stamp', async (t) => {
  let stamp = 'a'
  let computed = 0
  let fail = false
  const shared = new SharedDashboards<string>(
    () => stamp,
    async (audience) => {
      computed++
      await new Promise((resolve) => setImmediate(resolve))
      if (fail) throw new Error('cannot compute')
      return `${audience.key}@${stamp}#${computed}`
    },
  )
  const one: Audience = { key: 'one', visible: () => undefined }
  const two: Audience = { key: 'two', visible: () => undefined }

  t.same(await Promise.all([shared.of(one), shared.of(one), shared.of(one)]), ['one@a#1', 'one@a#1', 'one@a#1'], 'requests meanwhile wait for the same one')
  t.equal(await shared.of(one), 'one@a#1', 'and later ones take it')
  t.equal(await shared.of(two), 'two@a#2', 'another audience, its own')
  t.equal(await shared.of(one), 'one@a#1', 'which leaves the first one\'s in place')
  stamp = 'b'
  t.equal(await shared.of(one), 'one@b#3', 'a new stamp, a new computation')
  t.equal(computed, 3)

  stamp = 'c'
  fail = true
  await t.rejects(shared.of(one), { message: 'cannot compute' })
  fail = false
  t.equal(await shared.of(one), 'one@c#5', 'a failure is not kept for the next request')
})
