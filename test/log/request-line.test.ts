import t from 'tap'
import { millisText, quoted } from '../../src/log.js'

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

t.test('a duration is written as the JSON number it was, to the µs', (t) => {
  const table: Array<[number, string]> = [
    [0, '0.000'],
    [0.001, '0.001'],
    [0.12, '0.120'],
    [1.5, '1.500'],
    [12, '12.000'],
    [999.999, '999.999'],
    // Past 2^31 µs (35 minutes): an upload of hours keeps its duration.
    [7_200_000.123, '7200000.123'],
  ]
  for (const [ms, text] of table) t.equal(millisText(ms), text, String(ms))
  for (let i = 0; i < 5000; i++) {
    // As the server rounds a duration: to the µs.
    const ms = Math.round(Math.random() * 10 ** (i % 10) * 1000) / 1000
    if (JSON.parse(millisText(ms)) !== ms) t.fail(`round trip of ${ms}: ${millisText(ms)}`)
  }
  t.end()
})
