import t from 'tap'
import { connect } from 'node:net'
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

function parse(answer: string): { status: number; headers: string; body: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) as Record<string, unknown> }
}

t.test('refusals made before routing are JSON with a stable code, then the connection closes', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const cases: Array<[name: string, request: string, status: number, code: string]> = [
    ['a request target past the header limit', `GET /rest/v0/vms?filter=${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414, 'URI_TOO_LONG'],
    ['headers past the limit', `GET /rest/v0/vms HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(70_000)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
    ['a malformed request line', 'GET\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ['an invalid method', 'G@T / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ['a malformed header', 'GET / HTTP/1.1\r\nHost x\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ['a bad HTTP version', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n', 400, 'MALFORMED_REQUEST'],
  ]
  for (const [name, request, status, code] of cases) {
    const answer = parse(await raw(server.url, request))
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
