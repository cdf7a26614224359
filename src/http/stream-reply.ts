import type { ServerResponse } from 'node:http'
import { finished } from 'node:stream/promises'
import { aborted } from '../errors.js'
import { giveBack } from '../formats/lending.js'
import { drained } from './reply.js'
import type { StreamPacer } from './stream-pacer.js'

export interface StreamReply {
  readonly status: number
  readonly contentType: string
  /** exact body length when known, so a client can tell a cut download from a whole one */
  readonly length?: number
  readonly headers?: Readonly<Record<string, string>>
}

const prematureClose = (): Error => aborted('the client closed the connection before the end of the body')

/**
 * Streams a generated body with back-pressure. The status and headers go out
 * only with the first byte, so a failure before it is still an ordinary JSON
 * error; a failure after it destroys the connection (with Content-Length or
 * chunked framing the client sees a cut, never a truncated success).
 *
 * Between chunks the stream lets the JSON API have the CPU when it is busy
 * (see StreamPacer).
 *
 * Written chunk by chunk rather than piped: once the socket has taken a chunk
 * (its write callback), a lent buffer (a pool block, a worker's output slot) goes back, since
 * the response is the last user of what it sends.
 */
export async function sendStream(res: ServerResponse, reply: StreamReply, body: AsyncIterable<Buffer>, pacer: StreamPacer): Promise<void> {
  const iterator = body[Symbol.asyncIterator]()
  const yieldToApi = pacer.follow()
  try {
    let next = await iterator.next()
    res.statusCode = reply.status
    res.setHeader('Content-Type', reply.contentType)
    if (reply.length !== undefined) res.setHeader('Content-Length', reply.length)
    for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value)
    while (next.done !== true) {
      if (res.destroyed) throw prematureClose()
      const chunk = next.value
      // Given back on an error too: the socket has dropped the chunk, and an owner waiting for it (a worker's output slot) must not stall.
      const room = res.write(chunk, () => giveBack(chunk))
      if (!room) await drained(res)
      await yieldToApi()
      next = await iterator.next()
    }
    if (res.destroyed) throw prematureClose()
    res.end()
    await finished(res)
  } catch (error) {
    if (res.headersSent && !res.destroyed) res.destroy(error instanceof Error ? error : undefined)
    throw error
  } finally {
    await iterator.return?.()
  }
}
