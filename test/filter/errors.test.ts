import t from 'tap'
import { KeelError } from '../../src/errors.js'
import {
  compileFilter,
  filterCost,
  FilterSyntaxError,
  formatFilter,
  MAX_FILTER_COST,
  MAX_FILTER_LENGTH,
  MAX_NESTING_DEPTH,
  parseFilter,
} from '../../src/filter/index.js'
import { prng } from './fixtures/nodes.js'

const TERM = 'a term'
const TERM_OR_END = 'a term or end of input'
const TERM_OR_CLOSE = "a term or ')'"

const table: Array<[source: string, position: number, expected: string, reason?: string]> = [
  // Missing terms
  ['name_label:', 11, TERM],
  ['a:b:', 4, TERM],
  ['a: ', 3, TERM],
  ['!', 1, TERM],
  ['! ', 2, TERM],
  ['()', 1, TERM],
  ['|()', 2, TERM],
  ['a:)', 2, TERM],

  // Unbalanced parentheses
  ['(a', 2, TERM_OR_CLOSE],
  ['(a b ', 5, TERM_OR_CLOSE],
  ['((a)', 4, TERM_OR_CLOSE],
  ['|(a', 3, TERM_OR_CLOSE],
  ['a:b)', 3, TERM_OR_END],
  ['(a))', 3, TERM_OR_END],
  [')', 0, TERM_OR_END],
  ['|a', 1, "'('"],
  ['|', 1, "'('"],
  ['| a', 2, "'('"],

  // Characters that are not raw must be quoted
  [':', 0, TERM_OR_END],
  ['@', 0, TERM_OR_END],
  ['email:a@b.c', 7, TERM_OR_END],
  ['a b&c', 3, TERM_OR_END],
  ['a ?', 2, TERM_OR_END],
  ['a*:b', 2, TERM_OR_END],
  ['foo*?', 4, TERM_OR_END],
  ['a,b', 1, TERM_OR_END],
  ['a+b', 1, TERM_OR_END],
  ['#tag', 0, TERM_OR_END],
  ['(a @)', 3, TERM_OR_CLOSE],

  // Comparisons need a number right after the operator
  ['size:>abc', 6, 'a number'],
  ['>', 1, 'a number'],
  ['>=', 2, 'a number'],
  ['> 5', 1, 'a number'],
  ['>"5"', 1, 'a number'],
  ['<1-2', 1, 'a number'],
  ['>=-', 2, 'a number'],

  // Regexps
  ['/abc', 4, "'/'"],
  ['a:/abc\\/', 8, "'/'"],
  ['/abc\\', 5, "'/'"],
  ['/a/g', 3, 'no regexp flag other than i'],
  ['/a/ig', 4, 'no regexp flag other than i'],
  ['/a/ii', 4, 'no regexp flag other than i'],
  ['/a/I', 3, 'no regexp flag other than i'],
  ['/(/', 0, 'a valid regexp', 'missing ): ('],
  ['x /[/', 2, 'a valid regexp', 'missing ]: ['],
  ['a:/+/', 2, 'a valid regexp', 'no argument for repetition operator: +'],
  ['/a{2,1}/', 0, 'a valid regexp', 'invalid repetition size: {2,1}'],
  // What the linear-time engine cannot run is refused, naming the construct
  ['name_label:/(?=x)a/', 11, 'a valid regexp', 'invalid perl operator: (?='],
  ['name_label:/(?<=a)b/', 11, 'a valid regexp', 'invalid perl operator: (?<='],
  ['/(?!x)/', 0, 'a valid regexp', 'invalid perl operator: (?!'],
  ['/(a)\\1/', 0, 'a valid regexp', 'invalid escape sequence: \\1'],

  // A quoted string may stop at the end of input, but not in the middle of an escape
  ['"abc\\', 5, 'a character after \\'],
]

for (const [source, position, expected, reason] of table) {
  t.test(JSON.stringify(source), async (t) => {
    const error = catchError(() => parseFilter(source))
    t.type(error, FilterSyntaxError)
    t.type(error, KeelError)
    if (!(error instanceof FilterSyntaxError)) return
    t.equal(error.code, 'FILTER_PARSE_ERROR')
    t.equal(error.message, `parse error: expected ${expected} at position ${position}${reason === undefined ? '' : ` (${reason})`}`)
    t.equal(error.position, position)
    t.strictSame(error.data, { stringToParse: source, position, ...(reason === undefined ? {} : { reason }) })
    t.throws(() => compileFilter(source), FilterSyntaxError)
  })
}

t.test('an invalid regexp keeps the engine error as cause', async (t) => {
  const error = catchError(() => parseFilter('/(/'))
  t.type(error, FilterSyntaxError)
  t.type((error as FilterSyntaxError).cause, SyntaxError)
})

t.test('nesting depth is bounded', async (t) => {
  const bangs = (n: number): string => '!'.repeat(n) + 'a'
  const parens = (n: number): string => '('.repeat(n) + 'a b' + ')'.repeat(n)
  const path = (n: number): string => 'a:'.repeat(n) + 'a'
  const tooDeep = `at most ${MAX_NESTING_DEPTH} levels of nesting`

  for (const build of [bangs, parens, path]) {
    t.doesNotThrow(() => parseFilter(build(MAX_NESTING_DEPTH)), build(3))
    const source = build(MAX_NESTING_DEPTH + 1)
    const error = catchError(() => parseFilter(source))
    t.type(error, FilterSyntaxError, build(3))
    t.match((error as Error).message, tooDeep)
  }
  t.equal((catchError(() => parseFilter(bangs(101))) as FilterSyntaxError).position, 101)
  t.equal((catchError(() => parseFilter(path(101))) as FilterSyntaxError).position, 202)

  // Far beyond the limit: still a syntax error, never a stack overflow.
  for (const source of ['!'.repeat(2000), '('.repeat(2000), '|('.repeat(1000), 'a:'.repeat(1000)]) {
    t.type(catchError(() => parseFilter(source)), FilterSyntaxError)
  }
  // Wide filters do not nest: only their length and cost are limited.
  t.equal(formatFilter(parseFilter('a '.repeat(1000))).length, 1999)
})

t.test('length and cost are bounded, the limit in the answer', async (t) => {
  const long = catchError(() => parseFilter('a'.repeat(MAX_FILTER_LENGTH + 1)))
  t.type(long, KeelError)
  t.match(long, { code: 'FILTER_TOO_COMPLEX', data: { limit: MAX_FILTER_LENGTH, actual: MAX_FILTER_LENGTH + 1 } })
  t.doesNotThrow(() => parseFilter('a'.repeat(MAX_FILTER_LENGTH)))
  const costs: Array<[source: string, cost: number]> = [
    ['', 0],
    ['name_label:web', 1],
    ['name_label:/web/', 4],
    ['web', 16],
    ['/web/', 128],
    ['web*', 128],
    ['!(a:b c:/d/ e? f:>3)', 7],
    ['tags:(prod staging)', 2],
  ]
  for (const [source, cost] of costs) t.equal(filterCost(parseFilter(source)), cost, source)
  const costly = catchError(() => compileFilter('/a/ /b/'))
  t.match(costly, { code: 'FILTER_TOO_COMPLEX', data: { limit: MAX_FILTER_COST, actual: 256 } })
  t.doesNotThrow(() => compileFilter(`/a/ ${Array.from({ length: 32 }, (_, i) => `p${i}:x`).join(' ')}`), 'exactly at the limit')
})

t.test('hostile input never throws anything but FilterSyntaxError', async (t) => {
  const random = prng(0xf117e4)
  const pieces = [
    'a', 'foo', '32', '1e3', '-', '.', '$', 'é', 'ß', 'İ', '*', '(', ')', '|', '!', '<', '>', '=', ':', '?', '"', '\\',
    '/', ' ', '\t', '\n', 'i', 'g', '@', '[', ']', '{', '}', '+', '^', '\u00a0', '\u{10400}', '\ud800', '\0',
  ]
  const records = [null, undefined, 0, 'a', ['foo', 32], { a: { foo: '1e3' } }, Object.create(null) as unknown]
  let parsed = 0
  for (let i = 0; i < 20000; ++i) {
    let source = ''
    const length = 1 + Math.floor(random() * 12)
    for (let j = 0; j < length; ++j) source += pieces[Math.floor(random() * pieces.length)]
    let ast
    try {
      ast = parseFilter(source)
    } catch (error) {
      if (!(error instanceof FilterSyntaxError)) {
        t.fail(`${JSON.stringify(source)} threw ${String(error)}`)
        return
      }
      continue
    }
    ++parsed
    // Whatever parses can be formatted, parses back identically, and matches without throwing.
    const text = formatFilter(ast)
    if (!isSame(parseFilter(text), ast)) {
      t.fail(`${JSON.stringify(source)} formatted as ${JSON.stringify(text)} does not round-trip`)
      return
    }
    // Compiling may also refuse what costs too much, with its own code.
    let predicate
    try {
      predicate = compileFilter(source)
    } catch (error) {
      if ((error as KeelError).code !== 'FILTER_TOO_COMPLEX') t.fail(`${JSON.stringify(source)} threw ${String(error)}`)
      continue
    }
    for (const record of records) predicate(record)
  }
  t.ok(parsed > 1000, `${parsed} random filters parsed`)
})

function catchError(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  return undefined
}

function isSame(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}
