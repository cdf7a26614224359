import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { httpChunk } from '../../src/http/chunk.js'
import { Flusher, Outbox, type CutReason } from '../../src/http/outbox.js'
import { StreamBudget } from '../../src/http/stream-budget.js'
import { decodeChunked, rawConnection } from '../helpers/raw-http.js'

const MIB = 1024 * 1024

/** A server whose requests are handed to the test, and an outbox factory with its cuts recorded. */
async function harness(t: Test, limit: number, budgetLimit = 64 * MIB) {
  const requests: Array<{ req: IncomingMessage; res: ServerResponse }> = []
  const arrived = new Set<() => void>()
  const server: Server = createServer((req, res) => {
    requests.push({ req, res })
    for (const waiter of [...arrived]) waiter()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const flusher = new Flusher(1)
  const budget = new StreamBudget(budgetLimit)
  const cuts: Array<{ reason: CutReason; undelivered: number }> = []
  t.teardown(() => {
    flusher.close()
    server.closeAllConnections()
    server.close()
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    budget,
    cuts,
    /** resolves with the nth request (0-based) once it arrived */
    request: (n: number) =>
      new Promise<{ req: IncomingMessage; res: ServerResponse }>((resolve) => {
        const check = (): void => {
          const found = requests[n]
          if (found === undefined) return
          arrived.delete(check)
          resolve(found)
        }
        arrived.add(check)
        check()
      }),
    outbox: (res: ServerResponse) => {
      res.setHeader('Content-Type', 'application/x-ndjson')
      res.flushHeaders()
      return new Outbox(res, { limit, flusher, budget, onCut: (reason, undelivered) => cuts.push({ reason, undelivered }) })
    },
    flushAll: () => flusher.flushAll(),
  }
}

const line = (n: number, size: number) => httpChunk(`${JSON.stringify(n)}`.padEnd(size - 1, ' ') + '\n')

t.test('a socket that has yet to drain is not written to: each frame costs it a reference, and all arrive in order once it reads', async (t) => {
  const h = await harness(t, 64 * MIB)
  const client = await rawConnection(h.url, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  client.socket.pause()
  const { res } = await h.request(0)
  const outbox = h.outbox(res)
  const socket = res.socket
  if (socket === null) throw new Error('no socket')
  let sent = 0
  while (!socket.writableNeedDrain) {
    outbox.push(line(sent++, 64 * 1024))
    h.flushAll()
  }
  const held = socket.writableLength
  const frame = line(sent, 64 * 1024)
  for (let i = 0; i < 100; i++) outbox.push(frame)
  h.flushAll()
  t.equal(socket.writableLength, held, 'nothing more handed to the socket while it drains')
  t.equal(outbox.undelivered(), held + 100 * frame.length, 'what waits is counted')
  t.equal(h.budget.total, outbox.undelivered(), 'against the bound of all')
  for (let i = 1; i < 100; i++) outbox.push(line(sent + i, 64 * 1024))
  const total = sent + 199

  client.socket.resume()
  // Counted in bytes first (every frame has the same size): decoding MiBs on each read would take long.
  await client.until((raw) => raw.length > total * frame.length)
  await client.until((raw) => decodeChunked(raw).chunks.length >= total)
  const numbers = decodeChunked(client.raw()).chunks.map((chunk) => Number(chunk.trim()))
  t.same(numbers.slice(0, sent), Array.from({ length: sent }, (_, i) => i), 'what the socket took first')
  t.same(numbers.slice(sent, sent + 100), Array.from({ length: 100 }, () => sent), 'then the shared frame, once for each push')
  t.same(numbers.slice(sent + 100), Array.from({ length: 99 }, (_, i) => sent + i + 1), 'then the rest, in order')
  t.same(h.cuts, [])
})

t.test('past its own bound, a connection is cut and told why; nothing more reaches it', async (t) => {
  const h = await harness(t, 1 * MIB)
  const client = await rawConnection(h.url, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  client.socket.pause()
  const { res } = await h.request(0)
  const outbox = h.outbox(res)
  const frame = line(0, 64 * 1024)
  let pushed = 0
  while (h.cuts.length === 0) {
    if (++pushed > 1000) throw new Error('never cut')
    outbox.push(frame)
    h.flushAll()
  }
  t.equal(h.cuts.length, 1)
  t.equal(h.cuts[0]?.reason, 'connection')
  t.ok((h.cuts[0]?.undelivered as number) > MIB, 'cut once past the bound')
  t.ok((h.cuts[0]?.undelivered as number) <= MIB + frame.length, 'and no later')
  t.equal(outbox.undelivered(), 0, 'what it held is let go')
  t.equal(h.budget.total, 0, 'and no longer counted')
  outbox.push(frame)
  t.equal(h.cuts.length, 1, 'a push after the cut is ignored')
  client.socket.resume()
  await client.closed
})

t.test('a response queued behind another on its connection gets what was pushed before it had the connection', async (t) => {
  const h = await harness(t, 64 * MIB)
  const client = await rawConnection(h.url, 'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n')
  const first = await h.request(0)
  const second = await h.request(1)
  t.equal(second.res.socket, null, 'the second response waits for the first')
  const outbox = h.outbox(second.res)
  outbox.push(httpChunk('"queued"\n'))
  // A flush while the response has no connection writes nothing and keeps what waits.
  h.flushAll()
  first.res.end('first')
  await client.until((raw) => {
    const second = raw.slice(raw.indexOf('first') + 'first'.length)
    return decodeChunked(second).chunks.length > 0
  })
  const raw = client.raw()
  t.match(raw, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nfirst/)
  const rest = decodeChunked(raw.slice(raw.indexOf('first') + 'first'.length))
  t.match(rest.head, /^HTTP\/1\.1 200 OK\r\n/)
  t.same(rest.chunks, ['"queued"\n'])
  outbox.end()
  await client.until((raw) => decodeChunked(raw.slice(raw.indexOf('first') + 'first'.length)).ended)
  t.pass('end sends the last chunk')
})
