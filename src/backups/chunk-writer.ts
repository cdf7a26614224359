import type { FileHandle } from 'node:fs/promises'
import { giveBack } from '../formats/lending.js'
import { fileHandleAccess } from '../formats/vhd/random-access.js'

export interface ChunkWriteOptions {
  /** bytes per positional write: small chunks are gathered, larger ones split */
  readonly writeBytes?: number
  /** writes in flight at most */
  readonly inFlight?: number
  /** sees each chunk, in order, before it is written (a checksum taken here) */
  readonly each?: (chunk: Buffer) => void
}

/**
 * 1 MiB, and not more: on this machine's kernel (6.18, ext4) a 2 MiB write
 * into the page cache cost about twice the system CPU of the same bytes in
 * two 1 MiB writes (1 GiB copied by each of two streams: 2.9-5.6 s against
 * 0.9-3.9 s, most runs under 2.2 s; bench/RESULTS.md). A VHD's 512-byte
 * bitmaps go out with the block that follows them, not on their own.
 */
const WRITE_BYTES = 1024 * 1024

/**
 * Two writes in flight per file: the producer (a worker encoding an XVA, a
 * disk read) fills the next buffers while the last ones are copied into the
 * page cache. A backup writes two VMs at once and libuv runs four file
 * operations at a time: two writes each leave room for the reads.
 */
const IN_FLIGHT = 2

/**
 * Writes `chunks` one after the other from the start of `file`, each given
 * back (formats/lending.ts) once on disk, and returns the bytes written. The
 * chunks' order in the file is theirs; the writes themselves overlap. On a
 * failure, the writes already started settle before the error is thrown, so
 * none runs on after the caller closes the file.
 */
export async function writeChunks(file: FileHandle, chunks: AsyncIterable<Buffer>, { writeBytes = WRITE_BYTES, inFlight = IN_FLIGHT, each }: ChunkWriteOptions = {}): Promise<number> {
  const access = fileHandleAccess(file)
  const pending: Array<Promise<void>> = []
  let position = 0
  let batch: Buffer[] = []
  let batched = 0
  let previous: Promise<unknown> = Promise.resolve()
  /** Writes the batch; `done` are the chunks it ends, given back once it and every write before it are on disk. */
  const flush = async (done: readonly Buffer[]): Promise<void> => {
    const before = previous
    // Settles after its own write, whatever happened to the others: nothing runs on once all have settled.
    const written = access
      .write(position, batch)
      .then(() => before)
      .then(() => {
        for (const chunk of done) giveBack(chunk)
      })
    previous = written
    position += batched
    batch = []
    batched = 0
    // Awaited below in order; marked handled so a failure waiting its turn is not reported as unhandled.
    written.catch(() => undefined)
    pending.push(written)
    if (pending.length >= inFlight) await pending.shift()
  }
  let ending: Buffer[] = []
  try {
    for await (const chunk of chunks) {
      each?.(chunk)
      if (chunk.length === 0) ending.push(chunk)
      for (let offset = 0; offset < chunk.length; ) {
        const piece = chunk.subarray(offset, offset + writeBytes - batched)
        offset += piece.length
        batch.push(piece)
        batched += piece.length
        if (offset === chunk.length) ending.push(chunk)
        if (batched < writeBytes) continue
        const done = ending
        ending = []
        await flush(done)
      }
    }
    if (batched > 0) await flush(ending)
    for (let write = pending.shift(); write !== undefined; write = pending.shift()) await write
    return position
  } finally {
    await Promise.allSettled(pending)
  }
}
