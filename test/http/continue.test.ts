import t from 'tap'
import { Agent, request, type IncomingMessage } from 'node:http'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../helpers/server.js'

interface Outcome {
  readonly status: number
  readonly body: string
  /** whether `100 Continue` came before the answer */
  readonly continued: boolean
  /** whether the server closed the connection after answering (a next request could not use it) */
  readonly closed: boolean
}

/**
 * Sends headers with `Expect: 100-continue` and the body only once the server
 * says continue, as curl and node's client do. Its own keep-alive agent keeps
 * the socket open, so a close is the server's doing.
 */
function expectContinue(server: TestServer, method: string, path: string, headers: Record<string, string | number>, body: Buffer): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    let continued = false
    const agent = new Agent({ keepAlive: true })
    const req = request(server.url + path, { method, agent, headers: { ...headers, expect: '100-continue' } })
    req.on('continue', () => {
      continued = true
      req.end(body)
    })
    req.on('error', reject)
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const settle = (reused: boolean): void => {
          agent.destroy()
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), continued, closed: !reused })
        }
        // A next request through the same agent goes on this connection if the server kept it open;
        // the agent takes a kept socket back on a tick after the response ends.
        setImmediate(() => {
          const next = request(server.url + '/healthz', { agent }, (answer) => {
            answer.resume()
            answer.on('end', () => settle(next.reusedSocket))
          })
          next.on('error', () => settle(false))
          next.end()
        })
      })
    })
    req.flushHeaders()
  })
}

const ADMIN = basic(ADMIN_EMAIL, ADMIN_PASSWORD)

t.test('Expect: 100-continue is answered only once the handler reads the body', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const listed = await server.json<Array<{ id: string; size: number }>>('/rest/v0/vdis?fields=id,size')
  const vdi = listed.body[0]
  if (vdi === undefined) throw new Error('the demo lab has no VDI')
  const raw = `/rest/v0/vdis/${vdi.id}.raw`

  t.test('an unauthenticated upload is refused without continue, and the connection closed', async (t) => {
    const outcome = await expectContinue(server, 'PUT', raw, { 'content-length': vdi.size }, Buffer.alloc(0))
    t.equal(outcome.status, 401)
    t.notOk(outcome.continued)
    t.ok(outcome.closed)
  })

  t.test('an upload to a missing VDI is a 404 without continue', async (t) => {
    const outcome = await expectContinue(server, 'PUT', '/rest/v0/vdis/no-such-vdi.raw', { authorization: ADMIN, 'content-length': vdi.size }, Buffer.alloc(0))
    t.equal(outcome.status, 404)
    t.notOk(outcome.continued)
    t.ok(outcome.closed)
  })

  t.test('a raw upload of the wrong size is a 422 without continue', async (t) => {
    const outcome = await expectContinue(server, 'PUT', raw, { authorization: ADMIN, 'content-length': vdi.size - 512 }, Buffer.alloc(0))
    t.equal(outcome.status, 422)
    t.equal((JSON.parse(outcome.body) as { code: string }).code, 'DISK_SIZE_MISMATCH')
    t.notOk(outcome.continued)
    t.ok(outcome.closed)
  })

  t.test('a valid upload gets continue, sends its body, and is written', async (t) => {
    // The disk's own (empty) VHD export: a small body of the right size.
    const exported = Buffer.from(await (await server.request(`/rest/v0/vdis/${vdi.id}.vhd`)).arrayBuffer())
    const outcome = await expectContinue(server, 'PUT', `/rest/v0/vdis/${vdi.id}.vhd`, { authorization: ADMIN, 'content-length': exported.length }, exported)
    t.ok(outcome.continued)
    t.equal(outcome.status, 204, outcome.body)
    t.notOk(outcome.closed, 'an answered upload leaves the connection open')
  })

  t.test('a JSON action with a body and Expect runs', async (t) => {
    const demo = await demoIds(server)
    const body = Buffer.from('{}')
    const outcome = await expectContinue(
      server,
      'POST',
      `/rest/v0/vms/${demo.haltedVm}/actions/start?sync=true`,
      { authorization: ADMIN, 'content-type': 'application/json', 'content-length': body.length },
      body,
    )
    t.ok(outcome.continued)
    t.ok(outcome.status >= 200 && outcome.status < 300, `${outcome.status} ${outcome.body}`)
  })
})
