import { Agent, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { readMembers, ResultMembers } from '../../src/driver/xapi/result-members.js'
import { jsonRpc, XapiTransportError } from '../../src/driver/xapi/transport.js'
import { XapiError } from '../../src/driver/xapi/types.js'
import { decodeJsonRpcResponse, JsonRpcParseError, type JsonRpcResponse } from '../../src/xapi/json-rpc.js'

/** The reply fed in chunks of `size` bytes; each member the reader saw, and the decoded reply. */
function read(text: string, size: number): { seen: Array<[string, unknown]>; decoded: JsonRpcResponse } {
  const seen: Array<[string, unknown]> = []
  const members = new ResultMembers((key, value) => (seen.push([key, value]), value))
  const bytes = Buffer.from(text)
  for (let at = 0; at < bytes.length; at += size) members.write(bytes.subarray(at, at + size))
  return { seen, decoded: members.end() }
}

const RECORDS = {
  'OpaqueRef:1': { uuid: 'a', name_label: 'quote " brace { } bracket [ ] comma , colon :', other_config: { 'k\\"': 'v\\\\' }, VBDs: ['OpaqueRef:2', 'OpaqueRef:3'] },
  'OpaqueRef:2': { uuid: 'b', name_label: 'été \u{1F600} \u0000 \n\t', result: { result: 1 }, n: -1.5e3, t: true, z: null, empty: {}, list: [] },
  'OpaqueRef:"3"': { uuid: 'c', name_label: '\\', tags: ['\\"', '\\\\'] },
}

t.test('an object result read member by member, in chunks of any size, is the result JSON.parse reads', async (t) => {
  for (const text of [JSON.stringify({ jsonrpc: '2.0', result: RECORDS, id: 7 }), JSON.stringify({ id: 'x', result: RECORDS, error: null }), JSON.stringify({ jsonrpc: '2.0', result: RECORDS, id: 7 }, null, 2)]) {
    const expected = decodeJsonRpcResponse(text)
    for (const size of [1, 2, 3, 7, 64, 321, text.length]) {
      const { seen, decoded } = read(text, size)
      t.same(decoded, expected, `chunks of ${size}`)
      t.same(seen, Object.entries(RECORDS), `each member once, in order (chunks of ${size})`)
    }
  }
})

t.test('what the reader returns is the member kept', async (t) => {
  const members = new ResultMembers((key, value) => `${key}=${(value as { uuid: string }).uuid}`)
  members.write(Buffer.from(JSON.stringify({ jsonrpc: '2.0', result: RECORDS, id: 1 })))
  t.same(members.end(), { result: { 'OpaqueRef:1': 'OpaqueRef:1=a', 'OpaqueRef:2': 'OpaqueRef:2=b', 'OpaqueRef:"3"': 'OpaqueRef:"3"=c' } })
  t.same(readMembers(RECORDS, (key) => key), { 'OpaqueRef:1': 'OpaqueRef:1', 'OpaqueRef:2': 'OpaqueRef:2', 'OpaqueRef:"3"': 'OpaqueRef:"3"' })
})

t.test('errors, empty and other results are read as a whole, the reader not called', async (t) => {
  const replies = [
    { jsonrpc: '2.0', error: { code: 1, message: 'SESSION_INVALID', data: ['OpaqueRef:s'] }, id: 1 },
    { result: null, error: ['HANDLE_INVALID', 'VM', 'OpaqueRef:x'], id: 1 },
    { jsonrpc: '2.0', result: {}, id: 1 },
    { jsonrpc: '2.0', result: 'OpaqueRef:1', id: 1 },
    { jsonrpc: '2.0', result: [{ a: 1 }, 'b'], id: 1 },
    { jsonrpc: '2.0', id: { result: { a: 1 } }, result: 2 },
  ]
  for (const reply of replies) {
    const text = JSON.stringify(reply)
    for (const size of [1, 5, text.length]) {
      const { seen, decoded } = read(text, size)
      t.same(decoded, decodeJsonRpcResponse(text), `${text} in chunks of ${size}`)
      t.same(seen, [], 'no member read')
    }
  }
})

t.test('a reply cut or malformed fails as a parse error', async (t) => {
  const whole = JSON.stringify({ jsonrpc: '2.0', result: RECORDS, id: 7 })
  for (const text of [whole.slice(0, 40), whole.slice(0, -2), whole.replace('"uuid":"b"', '"uuid":b'), '<html>500</html>', '']) {
    t.throws(() => read(text, 16), JsonRpcParseError, JSON.stringify(text.slice(0, 50)))
  }
})

t.test('a call with a member reader: the result as the reader kept it, a failure as its XapiError, a reply cut in its result as a transport failure', async (t) => {
  const replies = [
    JSON.stringify({ jsonrpc: '2.0', result: RECORDS, id: 1 }),
    JSON.stringify({ jsonrpc: '2.0', error: { code: 1, message: 'SESSION_INVALID', data: ['OpaqueRef:s'] }, id: 2 }),
    JSON.stringify({ jsonrpc: '2.0', result: RECORDS, id: 3 }).slice(0, 120),
  ]
  let served = 0
  const server = createServer((req, res) => {
    const reply = Buffer.from(replies[served++] ?? '')
    req.resume()
    // Sent in pieces of 50 bytes, as a socket delivers a large reply.
    res.writeHead(200, { 'content-type': 'application/json' })
    for (let at = 0; at < reply.length; at += 50) res.write(reply.subarray(at, at + 50))
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const agent = new Agent({ keepAlive: true })
  t.teardown(() => (agent.destroy(), server.close()))
  const target = { origin: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), agent }
  const member = (_key: string, value: unknown): unknown => (value as { uuid: string }).uuid
  t.same(await jsonRpc(target, 'VM.get_all_records', [], { timeout: 5_000, member }), { 'OpaqueRef:1': 'a', 'OpaqueRef:2': 'b', 'OpaqueRef:"3"': 'c' })
  await t.rejects(jsonRpc(target, 'VM.get_all_records', [], { timeout: 5_000, member }), new XapiError('SESSION_INVALID', ['OpaqueRef:s']))
  await t.rejects(jsonRpc(target, 'VM.get_all_records', [], { timeout: 5_000, member }), XapiTransportError)
  t.equal(served, 3, 'each call sent once')
})
