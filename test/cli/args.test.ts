import t from 'tap'
import { connection, parseCommand } from '../../src/cli/args.js'

const options = { ...connection, output: { type: 'string', short: 'o' }, resume: { type: 'boolean' } } as const

const parse = (args: string[]) => parseCommand({ args, options, allowPositionals: true, strict: true })

t.test('a value that starts with a dash is a value, given long or short', async (t) => {
  const { values, positionals } = parse(['id', '--token', '-Ab_c', '-o', '-file', '--url', 'http://x'])
  t.same({ ...values }, { token: '-Ab_c', output: '-file', url: 'http://x' })
  t.same(positionals, ['id'])
})

t.test('the forms the parser already took are unchanged', (t) => {
  const table: [string[], Record<string, unknown>, string[]][] = [
    [['--token=-x'], { token: '-x' }, []],
    [['--token', 'abc', 'id'], { token: 'abc' }, ['id']],
    [['--resume', 'id'], { resume: true }, ['id']],
    [['--', '--token', 'x'], {}, ['--token', 'x']],
  ]
  for (const [args, values, positionals] of table) {
    const parsed = parse(args)
    t.same({ ...parsed.values }, values, args.join(' '))
    t.same(parsed.positionals, positionals, args.join(' '))
  }
  t.end()
})

t.test('a missing value is still refused, naming the option', async (t) => {
  t.throws(() => parse(['--token', '--url', 'http://x']), /--token/)
  t.throws(() => parse(['--token']), /--token/)
  t.throws(() => parse(['--nope', 'x']), /--nope/)
})
