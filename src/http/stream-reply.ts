import type { ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

export interface StreamReply {
  readonly status: number
  readonly contentType: string
  /** exact body length when known, so a client can tell a cut download from a whole one */
  readonly length?: number
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * Streams a generated body with back-pressure. The status and headers go out
 * only with the first byte, so a failure before it is still an ordinary JSON
 * error; a failure after it destroys the connection (with Content-Length or
 * chunked framing the client sees a cut, never a truncated success).
 */
export async function sendStream(res: ServerResponse, reply: StreamReply, body: AsyncIterable<Buffer>): Promise<void> {
  const iterator = body[Symbol.asyncIterator]()
  let first: IteratorResult<Buffer>
  try {
    first = await iterator.next()
  } catch (error) {
    await iterator.return?.()
    throw error
  }
  res.statusCode = reply.status
  res.setHeader('Content-Type', reply.contentType)
  if (reply.length !== undefined) res.setHeader('Content-Length', reply.length)
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value)
  async function* rest(): AsyncGenerator<Buffer> {
    if (first.done === true) return
    yield first.value
    for (;;) {
      const next = await iterator.next()
      if (next.done === true) return
      yield next.value
    }
  }
  try {
    await pipeline(Readable.from(rest(), { objectMode: false }), res)
  } finally {
    await iterator.return?.()
  }
}
