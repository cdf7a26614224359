import t from 'tap'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamPacer } from '../../src/http/stream-pacer.js'
import { sendStream } from '../../src/http/stream-reply.js'

const MiB = 1024 * 1024

/** A pacer that counts the turns a stream takes, never pausing. */
class CountingPacer extends StreamPacer {
  turns = 0

  constructor() {
    super(0)
  }

  override follow(): () => Promise<void> | undefined {
    return () => {
      this.turns++
      return undefined
    }
  }
}

async function* chunks(count: number, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < count; i++) yield Buffer.alloc(size, i)
}

/** Serves one body through sendStream and reads it whole; resolves with the bytes and the pacer's turns. */
async function served(pacedEvery: number | undefined, count: number, size: number): Promise<{ bytes: number; length: string | null; turns: number }> {
  const pacer = new CountingPacer()
  const server = createServer((_req, res) => {
    void sendStream(res, { status: 200, contentType: 'application/octet-stream', length: count * size, ...(pacedEvery === undefined ? {} : { pacedEvery }) }, chunks(count, size), pacer)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    const bytes = (await response.arrayBuffer()).byteLength
    return { bytes, length: response.headers.get('content-length'), turns: pacer.turns }
  } finally {
    server.close()
  }
}

t.test('a stream takes a turn after each chunk, or every `pacedEvery` bytes of smaller chunks', async (t) => {
  const each = await served(undefined, 32, 64 * 1024)
  t.same(each, { bytes: 2 * MiB, length: String(2 * MiB), turns: 32 })
  const paced = await served(MiB, 32, 64 * 1024)
  t.same(paced, { bytes: 2 * MiB, length: String(2 * MiB), turns: 2 }, 'the 64 KiB pieces of two MiB: two turns')
  const large = await served(MiB, 3, 2 * MiB)
  t.equal(large.turns, 3, 'chunks larger than the unit: a turn after each')
})
