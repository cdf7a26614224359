import t from 'tap'
import { termsOf, Visibilities } from '../../src/acl/visibility.js'
import { PrivilegeSet } from '../../src/acl/evaluate.js'
import { AudienceIndex } from '../../src/events/audience-index.js'
import { parseFilter } from '../../src/filter/index.js'

const POOL = '6f1c2b9e-1a2b-4c3d-8e9f-0123456789ab'

t.test('terms: what a selector plainly requires, or nothing when it does not', async (t) => {
  t.same(termsOf(parseFilter(`$pool:${POOL}`)), [{ property: '$pool', needle: POOL }])
  t.same(termsOf(parseFilter('tags:Prod power_state:Running')), [{ property: 'tags', needle: 'prod' }], 'an and: its first term')
  t.same(termsOf(parseFilter('|(tags:a tags:b)')), [{ property: 'tags', needle: 'a' }, { property: 'tags', needle: 'b' }], 'an or: all of its terms')
  t.equal(termsOf(parseFilter('|(tags:a name_label:/x/)')), undefined, 'an or with a branch without terms')
  t.equal(termsOf(parseFilter('!tags:a')), undefined)
  t.equal(termsOf(parseFilter('tags:web*')), undefined, 'a glob')
  t.equal(termsOf(parseFilter('web')), undefined, 'the whole object')
})

t.test('the index finds every audience a record may concern, by substring as filters match', async (t) => {
  const index = new AudienceIndex<string>()
  index.add('pool', [{ property: '$pool', needle: POOL }])
  index.add('prod', [{ property: 'tags', needle: 'prod' }])
  index.add('either', [{ property: 'tags', needle: 'prod' }, { property: 'tags', needle: 'dev' }])
  index.add('admin', undefined)
  const of = (record: object) => [...index.candidates([record])].sort()
  t.same(of({ $pool: POOL.toUpperCase(), tags: [] }), ['admin', 'pool'])
  t.same(of({ $pool: 'elsewhere', tags: ['Production'] }), ['admin', 'either', 'prod'], 'a tag holding the needle')
  t.same(of({ tags: [['nested-dev']] }), ['admin', 'either'], 'strings nested in arrays, as the filter tries them')
  t.same(of({ tags: 'none' }), ['admin'])
  t.same([...index.candidates([{ tags: ['dev'] }, { $pool: POOL }])].sort(), ['admin', 'either', 'pool'], 'before and after of a change')
  index.delete('either', [{ property: 'tags', needle: 'prod' }, { property: 'tags', needle: 'dev' }])
  index.delete('pool', [{ property: '$pool', needle: POOL }])
  t.same(of({ $pool: POOL, tags: ['dev', 'prod'] }), ['admin', 'prod'], 'removed audiences are gone')
  t.same(of({ tags: ['x'.repeat(100_000)] }), ['admin', 'prod'], 'a string too long to look up: every audience on that property')
})

t.test('visibilities: one per set of read privileges, whoever holds it', async (t) => {
  const visibilities = new Visibilities()
  const rule = (id: string, selector: string, action = 'read', effect: 'allow' | 'deny' = 'allow') => ({ id, resource: 'vm', action, effect, selector })
  const ann = new PrivilegeSet([rule('1', 'tags:a'), rule('2', 'tags:b', '*'), rule('3', 'tags:c', 'start')])
  const bob = new PrivilegeSet([rule('9', 'tags:b'), rule('8', 'tags:a'), rule('7', 'tags:a')])
  const cat = new PrivilegeSet([rule('1', 'tags:a'), rule('2', 'tags:b', 'read', 'deny')])
  t.equal(visibilities.of(ann, 'vm'), visibilities.of(bob, 'vm'), 'same read privileges, in any order, from any roles')
  t.not(visibilities.of(ann, 'vm'), visibilities.of(cat, 'vm'))
  const visible = visibilities.of(cat, 'vm')
  t.equal(visible.visible({ tags: ['a'] }), true)
  t.equal(visible.visible({ tags: ['a', 'b'] }), false, 'deny wins')
  t.same(visible.terms, [{ property: 'tags', needle: 'a' }], 'deny rules add no term')
  t.equal(visibilities.of(new PrivilegeSet([rule('1', '')]), 'vm').terms, undefined, 'an allow without a selector concerns every record')
})
