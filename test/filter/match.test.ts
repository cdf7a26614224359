import t from 'tap'
import { compileFilter, matches, parseFilter } from '../../src/filter/index.js'

class Vm {
  readonly name_label = 'foo'
}

const UUID = '0f3c8f5e-5b7a-4c1e-9d2a-3b4c5d6e7f80'

const table: Array<[filter: string, value: unknown, expected: boolean, why?: string]> = [
  // Empty filter matches everything
  ['', undefined, true],
  ['  ', { a: 1 }, true],

  // String: case-insensitive substring, recursing into arrays and plain objects
  ['power_state:running', { power_state: 'Running' }, true],
  ['power_state:running', { power_state: 'Halted' }, false],
  ['!power_state:Running', { power_state: 'Halted' }, true],
  ['!power_state:Running', { power_state: 'Running' }, false],
  ['power_state:|(Running Paused)', { power_state: 'Paused' }, true],
  ['power_state:|(Running Paused)', { power_state: 'Halted' }, false],
  ['tags:prod', { tags: ['web', 'Production'] }, true, 'substring in any tag'],
  ['tags:prod', { tags: ['dev'] }, false],
  ['foo', 'xFOOx', true],
  ['FOO', 'xfoox', true],
  ['foo', { a: { b: ['x', 'foo'] } }, true, 'deep recursion'],
  ['foo', [[['FOO']]], true],
  ['foo', { foo: 1 }, false, 'keys are not searched'],
  ['foo', 42, false],
  ['foo', null, false],
  ['foo', undefined, false],
  ['foo', new Map([['foo', 'foo']]), false, 'only plain objects are searched'],
  ['foo', new Vm(), false, 'class instances are not plain objects'],
  ['foo', Object.assign(Object.create(null) as object, { a: 'foo' }), true, 'null prototype is plain'],
  ['""', 'anything', true],
  ['""', 5, false],
  ['é', 'CAFÉ', true],
  ['ÅÄÖÉ', 'åäöé', true],
  ['name_label:"my VM"', { name_label: 'My VM 1' }, true],
  ['name_label:"my VM"', { name_label: 'myVM' }, false],
  ['email:"a@b.c"', { email: 'A@B.C' }, true],

  // NumberOrString vs quoted string
  ['32', 32, true],
  ['32', '32', true],
  ['32', 320, false, 'numbers match by equality'],
  ['32', '1320', true, 'strings by substring'],
  ['23', '1234', true],
  ['32', [1, 32], true],
  ['32', { a: { b: 32 } }, true],
  ['"32"', 32, false, 'quoting forces string matching'],
  ['"32"', '1320', true],
  ['"32"', [32], false],
  ['1e3', 1000, true],
  ['1e3', '1E3', true],
  ['1e3', '1000', false],
  ['0x1F', 31, true],
  ['size:32', { size: '32 GiB' }, true],

  // Globs: `*` is `.*`, case-insensitive, unanchored
  ['name_label:web*', { name_label: 'my-WEB-01' }, true],
  ['name_label:web*', { name_label: 'we' }, false],
  ['web*01', 'web-server-01', true],
  ['web*01', 'web-server', false],
  ['b*r', { foo: 'bar' }, true],
  ['b*r', ['x', ['bar']], true],
  ['a*b', 'a\nb', false, '. does not cross line breaks'],
  ['*', '', true],
  ['*', 5, false],
  ['$x*', 'a$X1', true, '$ is literal'],
  ['a.*', 'abc', false, '. is literal'],
  ['a.*', 'a.c', true],

  // Regexps
  ['name_label:/^web-\\d+$/', { name_label: 'web-12' }, true],
  ['name_label:/^web-\\d+$/', { name_label: 'web-12a' }, false],
  ['/eb-1/', 'web-12', true, 'unanchored'],
  ['/^WEB/', 'web', false],
  ['/^WEB/i', 'web', true],
  ['/b/', ['a', 'b'], true],
  ['/x/', { a: { b: 'x' } }, true],
  ['/1/', 1, false, 'non-strings never match'],
  ['/a\\/b/', 'a/b', true],
  ['//', 'x', true],
  ['//', null, false],

  // Properties: no array iteration, value != null
  ['VIFs:length:>=2', { VIFs: ['a', 'b'] }, true],
  ['VIFs:length:>=2', { VIFs: ['a'] }, false],
  ['$VBDs:length:>=4', { $VBDs: [1, 2, 3, 4] }, true],
  ['$VBDs:length:>=4', { $VBDs: [1, 2, 3] }, false],
  ['boot:order:cn', { boot: { order: 'cn' } }, true],
  ['boot:order:cn', { boot: { order: 'dc' } }, false],
  ['boot:order:cn', { boot: null }, false],
  [`creation:user:${UUID}`, { creation: { user: UUID, date: 1 } }, true],
  [`creation:user:${UUID}`, { creation: { user: 'someone-else' } }, false],
  [`object:uuid:${UUID}`, { object: { uuid: UUID.toUpperCase() } }, true],
  ['name:foo', [{ name: 'foo' }], false, 'arrays are not iterated'],
  ['0:foo', ['foo'], true, 'but indices are properties'],
  ['a:b', null, false],
  ['a:b', undefined, false],
  ['a:b', {}, false],
  ['a:!b', {}, true],
  ['a:!b', null, false, 'the property itself requires a value'],
  ['name_label:length:>3', { name_label: 'abcd' }, true, 'primitives have properties too'],
  ['a:(b c)', { a: 'cb' }, true],
  ['a:(b c)', { a: 'b' }, false],

  // Truthy
  ['auto_poweron?', { auto_poweron: true }, true],
  ['auto_poweron?', { auto_poweron: false }, false],
  ['auto_poweron?', { auto_poweron: 0 }, false],
  ['auto_poweron?', { auto_poweron: '' }, false],
  ['auto_poweron?', {}, false],
  ['auto_poweron?', null, false],
  ['a?', { a: [] }, true],
  ['!auto_poweron?', {}, true],

  // Comparisons: plain JS comparison, no array recursion
  ['size:>1000000', { size: 2e6 }, true],
  ['size:>1000000', { size: 1e6 }, false],
  ['size:>=1000000', { size: 1e6 }, true],
  ['size:<5', { size: 4 }, true],
  ['size:<=5', { size: 5 }, true],
  ['size:<5', { size: 5 }, false],
  ['size:>5', { size: '10' }, true, 'numeric strings coerce'],
  ['size:>5', { size: '4' }, false],
  ['size:>5', { size: 'abc' }, false],
  ['size:>5', {}, false, 'missing'],
  ['size:<5', {}, false, 'missing'],
  ['>5', [10, 20], false, 'no array recursion'],
  ['>5', 6, true, 'bare comparison applies to the root value'],
  ['>-1', -0.5, true],
  ['>0', new Date(5), true],
  ['<5', null, true, 'null compares as 0, as in XO'],
  ['>5', Symbol('x'), false],
  ['>5', Object.create(null), false, 'uncoercible objects do not throw'],
  ['>5', 10n, true],

  // Boolean structure
  ['a b', 'ab', true],
  ['a b', 'a', false],
  ['|(a b)', 'b', true],
  ['|(a b)', 'c', false],
  ['!a', 'b', true],
  ['!a', 'a', false],
  ['!(a b)', 'a', true],
  ['!!a', 'a', true],
  ['|(a:x b:y) !c?', { b: 'y' }, true],
  ['|(a:x b:y) !c?', { b: 'y', c: 1 }, false],

  // Non-ASCII raw strings
  ['åäöé:ÅÄÖÉ', { åäöé: 'xåäöéx' }, true],
  ['имя:ВМ', { имя: 'вм-1' }, true],
]

for (const [filter, value, expected, why] of table) {
  const name = `${JSON.stringify(filter)} on ${describe(value)}${why === undefined ? '' : ` (${why})`}`
  t.equal(compileFilter(filter)(value), expected, `compileFilter ${name}`)
  t.equal(matches(parseFilter(filter), value), expected, `matches ${name}`)
}

t.test('matches reuses the predicate built for a node', async (t) => {
  const node = parseFilter('name_label:/^web/i tags:prod')
  const records = [
    { name_label: 'Web-1', tags: ['prod'] },
    { name_label: 'db-1', tags: ['prod'] },
    { name_label: 'web-2', tags: [] },
  ]
  t.strictSame(
    records.map((r) => matches(node, r)),
    [true, false, false],
  )
  t.strictSame(
    records.map((r) => matches(node, r)),
    [true, false, false],
  )
})

function describe(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'symbol' || value instanceof Map || value instanceof Date) return String(value)
  if (value instanceof Vm) return 'a Vm instance'
  return JSON.stringify(value) ?? String(value)
}

t.test('text searched in place answers as the lowered text would', async (t) => {
  const texts = ['Running', 'vm-00123', 'WEB-01', 'İstanbul', 'a\u212Aelvin', 'straße', 'line one\nline two', 'x'.repeat(40) + 'Needle', '', 'ǅungla']
  const terms = ['running', 'RUN', 'vm-001', 'web', 'i', 'k', 'SS', 'ß', 'one', 'needle', 'x', 'ǆ', 'n']
  for (const text of texts) {
    for (const term of terms) {
      const expected = text.toLowerCase().includes(term.toLowerCase())
      t.equal(compileFilter(`name:${JSON.stringify(term)}`)({ name: text }), expected, `${JSON.stringify(text)} contains ${JSON.stringify(term)}: ${expected}`)
    }
  }
})

t.test('globs found part after part answer as the regexp would', async (t) => {
  const cases: Array<[pattern: string, text: string, expected: boolean]> = [
    ['vm-1*', 'vm-12345', true],
    ['vm-1*', 'VM-12', true],
    ['vm-1*', 'vm-21', false],
    ['a*b*c', 'xxAyyBzzC', true],
    ['a*b*c', 'cba', false],
    ['ab*ab', 'ab', false],
    ['ab*ab', 'abab', true],
    // `.` does not cross a newline: the parts must be on one line
    ['one*two', 'one\ntwo', false],
    ['one*two', 'x\none two', true],
    // non-ASCII text goes to the regexp engine's case folding
    ['k*n', '\u212Aelvin', true],
    ['stra*e', 'STRAßE', true],
    ['*web*', 'my-web-01', true],
  ]
  for (const [pattern, text, expected] of cases) {
    t.equal(compileFilter(`name:${pattern}`)({ name: text }), expected, `${pattern} on ${JSON.stringify(text)}: ${expected}`)
  }
})
