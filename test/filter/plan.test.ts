import t from 'tap'
import { compileFilter, planFilter, type FilterSyntaxError } from '../../src/filter/index.js'

const records = [
  { power_state: 'Running', name_label: 'web-1', tags: ['prod'], $pool: 'a' },
  { power_state: 'Halted', name_label: 'web-2', tags: [], $pool: 'b' },
  { power_state: 'Running', name_label: 'db-1', tags: ['prod', 'db'], $pool: 'b' },
  { power_state: 'Paused', name_label: 'q-1', $pool: 'a' },
]

t.test('the top-level property terms of a conjunction, each with the rest of the filter', async (t) => {
  const plan = planFilter('power_state:Running !name_label:web tags:prod')
  t.same(
    plan.terms.map((term) => term.name),
    ['power_state', 'tags'],
    'a negated term is no property term',
  )
  const [power, tags] = plan.terms
  if (power === undefined || tags === undefined) throw new Error('two terms')
  t.same(['Running', 'Halted', 'running state'].map(power.test), [true, false, true], 'the term tests the value, case aside, as a substring')
  t.same(records.map(power.rest), [false, false, true, false], 'the rest: not web, tagged prod')
  t.same(records.map(tags.rest), [false, false, true, false], 'the rest: running, not web')
  t.same(records.map(plan.predicate), [false, false, true, false])
  t.same(
    power.restOnValues.map(({ name }) => name),
    ['name_label', 'tags'],
    'the rest reads two properties, a negated term included',
  )
  t.equal(power.restOnRecord, undefined, 'and nothing else of the record')
  t.same(
    records.map((record) => power.restOnValues.every(({ name, test }) => test((record as Record<string, unknown>)[name]))),
    records.map(power.rest),
    'tested on the values, the rest answers as on the records',
  )
  const mixed = planFilter('power_state:Running web |(name_label:1 name_label:2)').terms[0]
  t.same(mixed?.restOnValues, [], 'a term on the whole record and a disjunction read more than one property')
  t.same(records.map((record) => mixed?.restOnRecord?.(record)), records.map((record) => mixed?.rest(record)))
})

t.test('a lone property term is its own plan, with nothing left to test', async (t) => {
  const plan = planFilter('$pool:a')
  t.equal(plan.terms.length, 1)
  t.same(records.map((record) => plan.terms[0]?.rest(record)), [true, true, true, true])
})

t.test('filters with no top-level property term have no terms', async (t) => {
  for (const filter of ['', 'running', '|(power_state:Running $pool:a)', '!power_state:Running', 'name_label?', 'web*', '/^web/']) {
    t.same(planFilter(filter).terms, [], filter)
  }
})

t.test('the plan answers as compileFilter does, and refuses what it refuses', async (t) => {
  for (const filter of ['power_state:running', 'power_state:Running $pool:b', 'tags:prod !tags:db', '(power_state:Running) name_label:1']) {
    t.same(records.map(planFilter(filter).predicate), records.map(compileFilter(filter)), filter)
  }
  for (const filter of ['power_state:(', 'a:"x\\', 'x'.repeat(3000), Array.from({ length: 20 }, () => '*a*').join(' ')]) {
    let expected: unknown
    try {
      compileFilter(filter)
    } catch (error) {
      expected = error
    }
    t.ok(expected instanceof Error, `compileFilter refuses ${filter.slice(0, 20)}`)
    t.throws(() => planFilter(filter), { code: (expected as FilterSyntaxError).code, message: (expected as Error).message })
  }
})
