import t from 'tap'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { millisText, quoted, quotedTarget } from '../../src/log.js'

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

t.test('a request target comes back whole, and node:http lets no character through that it would leave raw', async (t) => {
  const table = ['/rest/v0/vms', '/rest/v0/vms?filter=name_label:"a b"', '/a\\b', '/{}|^`~\u007f', '']
  for (const target of table) t.equal(JSON.parse(quotedTarget(target)), target, JSON.stringify(target))
  t.equal(quotedTarget(undefined), 'null', 'an absent target is null')

  // quotedTarget escapes only quotes and backslashes: a control character would be written raw.
  const targets: string[] = []
  const server = createServer((req, res) => {
    targets.push(req.url ?? '')
    res.end()
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  t.teardown(() => server.close())
  const { port } = server.address() as AddressInfo
  const status = (byte: number): Promise<string> =>
    new Promise((answered) => {
      const socket = connect(port, '127.0.0.1')
      let reply = ''
      socket.on('data', (data) => (reply += data.toString('latin1')))
      socket.on('close', () => answered(reply.slice(9, 12)))
      socket.end(Buffer.concat([Buffer.from('GET /a'), Buffer.from([byte]), Buffer.from('b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')]))
    })
  for (let byte = 0; byte < 0x20; byte++) t.equal(await status(byte), '400', `byte ${byte} in a target is refused`)
  t.equal(await status(0x22), '200', 'a quote is let through, and escaped')
  t.same(targets, ['/a"b'])
})
