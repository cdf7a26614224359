import t from 'tap'
import { parseFilter, type FilterNode } from '../../src/filter/index.js'
import { all, and, cmp, glob, not, num, or, prop, re, str, truthy } from './fixtures/nodes.js'

const UUID = '0f3c8f5e-5b7a-4c1e-9d2a-3b4c5d6e7f80'

const table: Array<[source: string, ast: FilterNode]> = [
  // Empty filter
  ['', all],
  [' \t\n ', all],

  // Strings: raw words and quoted strings
  ['foo', str('foo')],
  ['  foo  ', str('foo')],
  ['"foo bar"', str('foo bar')],
  ['""', str('')],
  ['"a\\"b\\\\c\\d"', str('a"b\\cd')],
  ['"unterminated ends at EOF', str('unterminated ends at EOF')],
  ['"(a|b)!:?*/"', str('(a|b)!:?*/')],
  ['-', str('-')],
  ['.', str('.')],
  ['$VBDs', str('$VBDs')],
  ['under_score', str('under_score')],
  ['1-2', str('1-2')],
  ['1_000', str('1_000')],
  ['åäöé', str('åäöé')],
  ['ß', str('ß')],
  ['ИМЯ', str('ИМЯ')],

  // Raw numeric tokens are NumberOrString, quoted ones stay strings
  ['32', num('32')],
  ['"32"', str('32')],
  ['-1.5', num('-1.5')],
  ['.5', num('.5')],
  ['1e3', num('1e3')],
  ['0x1F', num('0x1F')],
  ['Infinity', num('Infinity')],

  // Globs
  ['web*', glob('web*')],
  ['chi*go', glob('chi*go')],
  ['*', glob('*')],
  ['**', glob('**')],
  ['1*', glob('1*')],
  ['$x*.y', glob('$x*.y')],

  // Regexps
  ['/^web-\\d+$/', re('^web-\\d+$')],
  ['/abc/i', re('abc', 'i')],
  ['/a\\/b/', re('a\\/b')],
  ['/a\\\\/', re('a\\\\')],
  ['/[a-z]{2,}/', re('[a-z]{2,}')],
  ['//', re('')],
  ['/a b/', re('a b')],

  // Comparisons
  ['>5', cmp('>', 5)],
  ['>=5', cmp('>=', 5)],
  ['<-1.5', cmp('<', -1.5)],
  ['<=1e3', cmp('<=', 1000)],
  ['>0x10', cmp('>', 16)],
  ['>Infinity', cmp('>', Infinity)],
  ['>-0', cmp('>', -0)],

  // AND by juxtaposition, with or without whitespace
  ['a b', and(str('a'), str('b'))],
  ['a \t\n b  c', and(str('a'), str('b'), str('c'))],
  ['a"b"', and(str('a'), str('b'))],
  ['a!b', and(str('a'), not(str('b')))],
  ['/x/ a', and(re('x'), str('a'))],
  ['/x/i a', and(re('x', 'i'), str('a'))],
  ['/x/5', and(re('x'), num('5'))],
  ['a>5', and(str('a'), cmp('>', 5))],

  // Grouping
  ['(a b)', and(str('a'), str('b'))],
  ['( a  b )', and(str('a'), str('b'))],
  ['(a)', str('a')],
  ['((a))', str('a')],
  ['(a (b c))', and(str('a'), and(str('b'), str('c')))],
  ['a(b)', and(str('a'), str('b'))],

  // OR
  ['|(a b)', or(str('a'), str('b'))],
  ['| ( a b )', or(str('a'), str('b'))],
  ['|(a)', str('a')],
  ['|(a (b c))', or(str('a'), and(str('b'), str('c')))],

  // NOT
  ['!a', not(str('a'))],
  ['! a', not(str('a'))],
  ['!!a', not(not(str('a')))],
  ['!(a b)', not(and(str('a'), str('b')))],
  ['!a:b', not(prop('a', str('b')))],
  ['!>5', not(cmp('>', 5))],

  // Properties
  ['a:b', prop('a', str('b'))],
  ['a : b', prop('a', str('b'))],
  ['a:b c', and(prop('a', str('b')), str('c'))],
  ['a:b:c', prop('a', prop('b', str('c')))],
  ['"my prop":x', prop('my prop', str('x'))],
  ['"my prop" : x', prop('my prop', str('x'))],
  ['0:x', prop('0', str('x'))],
  ['a:(b c)', prop('a', and(str('b'), str('c')))],
  ['a:|(b c)', prop('a', or(str('b'), str('c')))],
  ['a:!b', prop('a', not(str('b')))],
  ['a:>5', prop('a', cmp('>', 5))],
  ['a: >=5', prop('a', cmp('>=', 5))],
  ['a:b?', prop('a', truthy('b'))],
  ['a:/x/i', prop('a', re('x', 'i'))],
  ['a:*', prop('a', glob('*'))],
  ['a:32', prop('a', num('32'))],
  ['åäöé:ÅÄÖÉ', prop('åäöé', str('ÅÄÖÉ'))],

  // Truthy
  ['a?', truthy('a')],
  ['"a b"?', truthy('a b')],
  ['a? b', and(truthy('a'), str('b'))],

  // Every example of the notes
  ['power_state:running', prop('power_state', str('running'))],
  ['!power_state:Running', not(prop('power_state', str('Running')))],
  ['power_state:|(Running Paused)', prop('power_state', or(str('Running'), str('Paused')))],
  ['tags:prod', prop('tags', str('prod'))],
  ['name_label:/^web-\\d+$/', prop('name_label', re('^web-\\d+$'))],
  ['size:>1000000', prop('size', cmp('>', 1000000))],
  ['auto_poweron?', truthy('auto_poweron')],
  ['boot:order:cn', prop('boot', prop('order', str('cn')))],
  [`creation:user:${UUID}`, prop('creation', prop('user', str(UUID)))],
  [`object:uuid:${UUID}`, prop('object', prop('uuid', str(UUID)))],
  ['$VBDs:length:>=4', prop('$VBDs', prop('length', cmp('>=', 4)))],
  ['VIFs:length:>=2', prop('VIFs', prop('length', cmp('>=', 2)))],
  ['name_label:"my VM"', prop('name_label', str('my VM'))],
  ['email:"a@b.c"', prop('email', str('a@b.c'))],
  ['name_label:my VM', and(prop('name_label', str('my')), str('VM'))],
  ['name_label:web*', prop('name_label', glob('web*'))],

  // XO's own fixture
  [
    'foo !"\\\\ \\"" name:|(wonderwoman batman) hasCape? age:32 chi*go /^foo\\/bar\\./i',
    and(
      str('foo'),
      not(str('\\ "')),
      prop('name', or(str('wonderwoman'), str('batman'))),
      truthy('hasCape'),
      prop('age', num('32')),
      glob('chi*go'),
      re('^foo\\/bar\\.', 'i'),
    ),
  ],
]

for (const [source, ast] of table) {
  t.strictSame(parseFilter(source), ast, JSON.stringify(source))
}
