import t from 'tap'
import { readMembers, ResultMembers } from '../../src/driver/xapi/result-members.js'
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
