import type { FileHandle } from 'node:fs/promises'
import { giveBack } from '../formats/lending.js'
import { fileHandleAccess } from '../formats/vhd/random-access.js'

export interface ChunkWriteOptions {
  /** chunks are gathered into one positional writev of at least this many bytes (the last may be shorter) */
  readonly batchBytes?: number
  /** writes in flight at most */
  readonly inFlight?: number
  /** sees each chunk, in order, before it is written (a checksum taken here) */
  readonly each?: (chunk: Buffer) => void
}

/** An XVA's output slot: a VHD's 512-byte bitmaps go out with the block that follows them, not on their own. */
const BATCH_BYTES = 1024 * 1024

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
export async function writeChunks(file: FileHandle, chunks: AsyncIterable<Buffer>, { batchBytes = BATCH_BYTES, inFlight = IN_FLIGHT, each }: ChunkWriteOptions = {}): Promise<number> {
  const access = fileHandleAccess(file)
  const pending: Array<Promise<void>> = []
  let position = 0
  let batch: Buffer[] = []
  let batched = 0
  const flush = async (): Promise<void> => {
    const pieces = batch
    const at = position
    position += batched
    batch = []
    batched = 0
    const written = access.write(at, pieces).then(() => {
      for (const piece of pieces) giveBack(piece)
    })
    // Awaited below in order; marked handled so a failure waiting its turn is not reported as unhandled.
    written.catch(() => undefined)
    pending.push(written)
    if (pending.length >= inFlight) await pending.shift()
  }
  try {
    for await (const chunk of chunks) {
      each?.(chunk)
      if (chunk.length === 0) continue
      batch.push(chunk)
      batched += chunk.length
      if (batched >= batchBytes) await flush()
    }
    if (batched > 0) await flush()
    for (let write = pending.shift(); write !== undefined; write = pending.shift()) await write
    return position
  } finally {
    await Promise.allSettled(pending)
  }
}
