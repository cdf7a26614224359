import t from 'tap'
import { compileFilter, filterCost, formatFilter, matches, MAX_FILTER_COST, parseFilter, type FilterNode } from '../../src/filter/index.js'
import { all, and, cmp, glob, not, num, or, prng, prop, re, str, truthy } from './fixtures/nodes.js'

t.test('formats to canonical source', async (t) => {
  const table: Array<[ast: FilterNode, text: string]> = [
    [all, ''],
    [str('foo'), 'foo'],
    [str('my VM'), '"my VM"'],
    [str('a@b.c'), '"a@b.c"'],
    [str(''), '""'],
    [str('32'), '"32"'],
    [str('Infinity'), '"Infinity"'],
    [str('a*b'), '"a*b"'],
    [str('a"b\\c'), '"a\\"b\\\\c"'],
    [str('é-ß'), 'é-ß'],
    [num('1e3'), '1e3'],
    [glob('web*'), 'web*'],
    [re('^web-\\d+$'), '/^web-\\d+$/'],
    [re('a/b', 'i'), '/a\\/b/i'],
    [re('a\\/b'), '/a\\/b/'],
    [re(''), '//'],
    [cmp('>=', 4), '>=4'],
    [cmp('<', -1.5), '<-1.5'],
    [cmp('>', 1e21), '>1e21'],
    [cmp('>', 1e-7), '>1e-7'],
    [cmp('>', -0), '>-0'],
    [cmp('<', Infinity), '<Infinity'],
    [truthy('auto_poweron'), 'auto_poweron?'],
    [truthy('a b'), '"a b"?'],
    [prop('0', str('x')), '"0":x'],
    [prop('$VBDs', prop('length', cmp('>=', 4))), '$VBDs:length:>=4'],
    [prop('power_state', or(str('Running'), str('Paused'))), 'power_state:|(Running Paused)'],
    [prop('a', and(str('b'), str('c'))), 'a:(b c)'],
    [and(str('a'), and(str('b'), str('c'))), 'a (b c)'],
    [not(and(str('a'), str('b'))), '!(a b)'],
    [not(prop('power_state', str('Running'))), '!power_state:Running'],
    [and(str('a')), 'a'],
    [prop('a', or(and(str('b')))), 'a:b'],
  ]
  for (const [ast, text] of table) t.equal(formatFilter(ast), text, text)
})

t.test('refuses nodes the syntax cannot express', async (t) => {
  const table: FilterNode[] = [
    and(),
    or(),
    not(and()),
    prop('a', all),
    and(str('a'), all),
    glob('abc'),
    glob('a b*'),
    num('abc'),
    num(' 1'),
    cmp('>', NaN),
    re('('),
    re('a\\'),
  ]
  for (const ast of table) t.throws(() => formatFilter(ast), TypeError, JSON.stringify(ast))
})

t.test('random ASTs survive formatting and parsing', async (t) => {
  const random = prng(20240917)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T

  const names = ['a', 'name_label', '$VBDs', 'my prop', '', '0', '32', 'é', 'a"b', 'a\\b', 'x*y', 'Infinity', 'ß:?']
  const stringChars = ['a', 'B', '1', ' ', '"', '\\', '*', 'é', '-', '.', '(', ')', ':', '?', '/', '\n', '$']
  const numbers = ['32', '-1.5', '.5', '1e3', '0x1F', 'Infinity', '0', '-0', '007']
  const globParts = ['web', '01', 'a.b', '$x', 'é', '-', '']
  const patterns = ['^web-\\d+$', 'a/b', '[/]', 'a\\/b', '', '(x|y)+', 'é', '\\.', '1']
  const values = [0, -0, 1.5, -3, 1e21, 1e-7, Infinity, -Infinity, 123456789, 0.1 + 0.2]

  const randomString = (): string => {
    let s = ''
    const length = Math.floor(random() * 5)
    for (let i = 0; i < length; ++i) s += pick(stringChars)
    return s
  }
  const children = (depth: number): FilterNode[] =>
    Array.from({ length: 1 + Math.floor(random() * 4) }, () => randomNode(depth + 1))

  const randomNode = (depth: number): FilterNode => {
    const kind = Math.floor(random() * (depth >= 4 ? 6 : 11))
    switch (kind) {
      case 0:
        return str(random() < 0.5 ? randomString() : pick([...names, ...numbers]))
      case 1:
        return num(pick(numbers))
      case 2:
        return glob(Array.from({ length: 2 + Math.floor(random() * 2) }, () => pick(globParts)).join('*'))
      case 3:
        return re(pick(patterns), pick(['', 'i'] as const))
      case 4:
        return cmp(pick(['>', '>=', '<', '<='] as const), pick(values))
      case 5:
        return truthy(pick(names))
      case 6:
        return and(...children(depth))
      case 7:
        return or(...children(depth))
      case 8:
        return not(randomNode(depth + 1))
      default:
        return prop(pick(names), randomNode(depth + 1))
    }
  }

  const records: unknown[] = [
    null,
    undefined,
    0,
    32,
    -1.5,
    1000,
    'web-12',
    '',
    ['a', 32, 'é'],
    {
      a: 'web-01',
      name_label: 'My VM',
      $VBDs: [1, 2, 3, 4],
      'my prop': 'x y',
      '': 'empty',
      0: 'zero',
      32: 32,
      é: 'É',
      'a"b': true,
      'a\\b': 0,
      'x*y': 'a/b',
      Infinity: Infinity,
      'ß:?': [1e21],
    },
    { a: { a: { a: 'x' } }, name_label: ['web', '01'], tags: ['prod'], 'my prop': { 'my prop': '1e3' } },
    [{ a: 'web' }, { $VBDs: '007' }],
  ]

  for (let i = 0; i < 500; ++i) {
    const ast = random() < 0.03 ? all : randomNode(0)
    const text = formatFilter(ast)
    const parsed = parseFilter(text)
    t.strictSame(parsed, normalize(ast), text)
    // Random trees may cost more than a request may ask; the predicate is the same either way.
    const predicate = filterCost(parsed) <= MAX_FILTER_COST ? compileFilter(text) : (value: unknown) => matches(parsed, value)
    for (const record of records) {
      const expected = matches(ast, record)
      if (matches(parsed, record) !== expected || predicate(record) !== expected) {
        t.fail(`${text} disagrees on ${JSON.stringify(record)}`)
      }
    }
  }
})

/** What a hand-built AST reads back as: single-term groups collapse and slashes in regexps get escaped. */
function normalize(node: FilterNode): FilterNode {
  switch (node.type) {
    case 'and':
    case 'or': {
      const children = node.children.map(normalize)
      const [first] = children
      return children.length === 1 && first !== undefined ? first : { type: node.type, children }
    }
    case 'not':
      return not(normalize(node.child))
    case 'property':
      return prop(node.name, normalize(node.child))
    case 'regexp':
      return re(
        node.pattern.replace(/\\[\s\S]|\//g, (m) => (m === '/' ? '\\/' : m)),
        node.flags,
      )
    default:
      return node
  }
}
