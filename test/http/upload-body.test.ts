import t from 'tap'
import { once } from 'node:events'
import { createServer, request, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { COLLECT_EVERY, uploadBody } from '../../src/http/upload-body.js'

const MiB = 1024 * 1024

/** POSTs `body` to a server that reads it through uploadBody, and resolves with what it read. */
async function roundTrip(body: Buffer): Promise<Buffer> {
  const received = new Promise<Buffer>((resolve, reject) => {
    server.once('request', (req: IncomingMessage, res) => {
      const parts: Buffer[] = []
      void (async () => {
        for await (const chunk of uploadBody(req)) parts.push(Buffer.from(chunk))
        res.end()
        resolve(Buffer.concat(parts))
      })().catch(reject)
    })
  })
  const { port } = server.address() as AddressInfo
  const req = request({ port, method: 'POST', headers: { 'content-length': body.length } })
  req.end(body)
  const [res] = (await once(req, 'response')) as [IncomingMessage]
  res.resume()
  return received
}

const server = createServer()
server.listen(0, '127.0.0.1')
await once(server, 'listening')
t.teardown(() => server.close())

t.test('the body passes unchanged, with a young-generation collection per COLLECT_EVERY bytes', async (t) => {
  const calls: unknown[] = []
  const saved = globalThis.gc
  globalThis.gc = ((options: unknown) => void calls.push(options)) as NodeJS.GCFunction
  t.teardown(() => (globalThis.gc = saved))
  const body = randomBytes(3 * COLLECT_EVERY + MiB)
  t.ok((await roundTrip(body)).equals(body), 'every byte, in order')
  t.same(calls, [{ type: 'minor' }, { type: 'minor' }, { type: 'minor' }], 'one collection per COLLECT_EVERY bytes')
})

t.test('without gc exposed, the body passes all the same', async (t) => {
  const saved = globalThis.gc
  globalThis.gc = undefined
  t.teardown(() => (globalThis.gc = saved))
  const body = randomBytes(COLLECT_EVERY + 17)
  t.ok((await roundTrip(body)).equals(body))
})
