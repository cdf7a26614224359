import t from 'tap'
import { connect } from 'node:net'
import { overflowedIn } from '../../src/http/client-error.js'
import { startServer } from '../helpers/server.js'

/** Sends raw bytes and reads until the server closes: the whole answer, status line included. */
function raw(url: string, request: string | Buffer): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')))
    socket.write(request)
  })
}

/** The last of the answers a connection got (a pipelined first request is answered before the refusal). */
function lastAnswer(answers: string): string {
  return answers.slice(answers.lastIndexOf('HTTP/1.1 '))
}

function parse(answer: string): { status: number; headers: string; body: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) as Record<string, unknown> }
}

t.test('refusals made before routing are JSON with a stable code, then the connection closes', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const cases: Array<[name: string, request: string, status: number, code: string]> = [
    ['a request target past the header limit', `GET /rest/v0/vms?filter=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414, 'URI_TOO_LONG'],
    ['a request target past the header limit by far', `GET /rest/v0/vms?filter=${'a'.repeat(200_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414, 'URI_TOO_LONG'],
    ['headers past the limit', `GET /rest/v0/vms HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(70_000)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['a header with spaces past the limit by far', `GET /rest/v0/vms HTTP/1.1\r\nHost: x\r\nX-Big: ${'b '.repeat(100_000)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['a long header name', `GET /rest/v0/vms HTTP/1.1\r\nHost: x\r\nX-${'n'.repeat(70_000)}: 1\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['many headers', `GET /rest/v0/vms HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 700 }, (_, i) => `X-H${i}: ${'b'.repeat(100)}\r\n`).join('')}\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['a long target after a first request on the connection', `GET /rest/v0/vms HTTP/1.1\r\nHost: x\r\n\r\nGET /rest/v0/vms?filter=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414, 'URI_TOO_LONG'],
    ['a malformed request line', 'GET\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ['an invalid method', 'G@T / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ['a malformed header', 'GET / HTTP/1.1\r\nHost x\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ['a bad HTTP version', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', 400, 'MALFORMED_REQUEST'],
  ]
  for (const [name, request, status, code] of cases) {
    const answer = parse(lastAnswer(await raw(server.url, request)))
    t.equal(answer.status, status, name)
    t.match(answer.headers, /content-type: application\/json/, name)
    t.match(answer.headers, /connection: close/, name)
    t.match(answer.headers, /x-request-id: [0-9a-f-]{36}/, name)
    t.equal(answer.body['code'], code, name)
    t.type(answer.body['error'], 'string', name)
  }
  const long = parse(await raw(server.url, `GET /rest/v0/vms?filter=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`))
  t.same(long.body, { error: 'request target is too long', code: 'URI_TOO_LONG', data: { limit: 65536 } })
  const routed = parse(await raw(server.url, `GET /rest/v0/vms?filter=${'a'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`))
  t.equal(routed.status, 414, 'a target under the header limit but over the target limit')
  t.same(routed.body, { error: 'request target is too long', code: 'URI_TOO_LONG', data: { limit: 16384 } })
  t.equal((await server.request('/rest/v0/vms?limit=1')).status, 200, 'the server still answers')
})

t.test('where the header limit was crossed, from the packet being parsed and the position in it', (t) => {
  const at = (text: string, position = text.length) => overflowedIn(Buffer.from(text, 'latin1'), position)
  const cases: Array<[name: string, packet: string, position: number | undefined, expected: 'target' | 'headers']> = [
    ['the target ended in this packet', 'aaaa HTTP/1.1\r\nHost: x\r\n\r\n', 4, 'target'],
    ['a header value ended in this packet', 'bbbb\r\n\r\n', 4, 'headers'],
    ['a header value ended at a bare line feed', 'bbbb\n\n', 4, 'headers'],
    ['a header name ended in this packet', 'nnnn: 1\r\n', 5, 'headers'],
    ['a header name ended in this packet, its value unspaced', 'nnnn:1\r\n', 5, 'headers'],
    ['a line ended earlier in this packet', 'x\r\nX-H1: bbbb\r\nX-H2: bb', 20, 'headers'],
    ['a value with spaces cut by the packet end', 'b b b b', undefined, 'headers'],
    ['a value with tabs cut by the packet end', 'b\tb\tb', undefined, 'headers'],
    ['the request start with its target cut by the packet end', 'GET /rest/v0/vms?filter=aaaa', undefined, 'target'],
    ['a run without spaces cut by the packet end (taken for a target)', 'aaaaaaaa', undefined, 'target'],
  ]
  for (const [name, packet, position, expected] of cases) t.equal(at(packet, position), expected, name)
  t.equal(overflowedIn(undefined, 3), 'headers', 'no packet')
  t.equal(overflowedIn(Buffer.from('aaa'), undefined), 'headers', 'no position')
  t.equal(overflowedIn(Buffer.from('aaa'), 9), 'headers', 'a position past the packet')
  t.end()
})
