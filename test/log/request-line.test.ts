import t from 'tap'
import { quoted } from '../../src/log.js'

t.test('every text comes back whole from the JSON of a request line', (t) => {
  const table = [
    '',
    '/rest/v0/vms/0f0e0d0c-1234-5678-9abc-def012345678',
    '/rest/v0/vms?filter=name_label:"a b"',
    'back\\slash',
    'tab\tand\nnewline\r',
    '\u0000\u001f\u007f',
    'é ü ✓ 日本',
    'lone \ud800 surrogate',
    '</script>',
  ]
  for (const text of table) t.equal(JSON.parse(quoted(text)), text, JSON.stringify(text))
  const alphabet = ['a', ' ', '"', '\\', '\n', '\u0001', '\u007f', 'é', '\ud83d', '\ude00', '/', '%', '{']
  for (let i = 0; i < 2000; i++) {
    const text = Array.from({ length: i % 17 }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('')
    if (JSON.parse(quoted(text)) !== text) t.fail(`round trip of ${JSON.stringify(text)}`)
  }
  t.equal(quoted(undefined), 'null', 'an absent value is null')
  t.end()
})
