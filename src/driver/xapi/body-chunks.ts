import { on } from 'node:events'
import type { Readable } from 'node:stream'
import { youngCollections } from '../../http/young-collection.js'

/**
 * Chunks waiting for the reader before the body is paused, and how few let
 * it flow again. A socket read is at most 64 KiB: the queue holds at most
 * 2 MiB, one VHD block.
 */
const QUEUED = 32
const RESUME_BELOW = 16

/**
 * A transfer's body as its chunks come off the socket, the body paused only
 * once QUEUED chunks wait unread (backpressure to the host, through TCP),
 * its dead chunks collected as it goes (young-collection.ts).
 *
 * The stream's own iterator reads it paused, against its 16 KiB high-water
 * mark: every 64 KiB chunk stopped the socket and the next read started it
 * again (two `epoll_ctl` calls, a pause and a resume, per chunk).
 */
export async function* bodyChunks(body: Readable): AsyncGenerator<Buffer> {
  const read = youngCollections()
  // 'end' ends a whole body; 'close' without it (destroyed with no error) ends it short, which the reader reports as a cut.
  for await (const args of on(body, 'data', { close: ['end', 'close'], highWaterMark: QUEUED, lowWaterMark: RESUME_BELOW })) {
    const [chunk]: unknown[] = args
    if (!Buffer.isBuffer(chunk)) throw new TypeError('a transfer body is read as bytes')
    yield chunk
    read(chunk.length)
  }
}
