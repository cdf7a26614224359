import type { FileHandle } from 'node:fs/promises'
import { giveBack } from '../formats/lending.js'
import { fileHandleAccess } from '../formats/vhd/random-access.js'
import { BackgroundSync } from './background-sync.js'

export interface ChunkWriteOptions {
  /** bytes per positional write: small chunks are gathered, larger ones split */
  readonly writeBytes?: number
  /** sees each chunk, in order, before it is written (a checksum taken here) */
  readonly each?: (chunk: Buffer) => void
  /**
   * bytes after which the file's `datasync` is started, the writes going on
   * meanwhile; the caller's last sync then has only the tail to wait for
   */
  readonly syncEvery?: number
}

/**
 * 1 MiB, and not more: on this machine's kernel (6.18, ext4) a 2 MiB write
 * into the page cache cost about twice the system CPU of the same bytes in
 * two 1 MiB writes (1 GiB copied by each of two streams: 2.9-5.6 s against
 * 0.9-3.9 s, most runs under 2.2 s; bench/RESULTS.md; runs this wide may
 * also be this VM's pages from free memory, 1.4-3.0 s per GiB to their
 * writer). A VHD's 512-byte bitmaps go out with the block that follows
 * them, not on their own.
 */
const WRITE_BYTES = 1024 * 1024

/**
 * Writes `chunks` one after the other from the start of `file`, each given
 * back (formats/lending.ts) once on disk, and returns the bytes written. One
 * write runs at a time while the next chunks are taken: a second write to the
 * same file would only wait for the file's lock, spinning (measured 4.5 % of
 * a delta job's CPU with two in flight). On a failure, the write under way
 * settles before the error is thrown, so none runs on after the caller
 * closes the file.
 *
 * With `syncEvery`, the kernel writes the file back while the work goes on:
 * an archive under the page cache's background threshold (10 % of the
 * available memory here) was otherwise written back only by the final sync,
 * its slot of the job idle meanwhile. A failed sync fails the write
 * (backups/background-sync.ts).
 */
export async function writeChunks(file: FileHandle, chunks: AsyncIterable<Buffer>, { writeBytes = WRITE_BYTES, each, syncEvery }: ChunkWriteOptions = {}): Promise<number> {
  const access = fileHandleAccess(file)
  let running: Promise<void> = Promise.resolve()
  let position = 0
  let batch: Buffer[] = []
  let batched = 0
  const sync = syncEvery === undefined ? undefined : new BackgroundSync(() => file.datasync(), syncEvery)
  /** Starts writing the batch once the last write is done; `done` are the chunks it ends, given back once it is. */
  const flush = async (done: readonly Buffer[]): Promise<void> => {
    await running
    sync?.check()
    const pieces = batch
    const end = position + batched
    running = access.write(position, pieces).then(() => {
      for (const chunk of done) giveBack(chunk)
      sync?.written(end)
    })
    // Awaited by the next flush or at the end; marked handled so a failure meanwhile is not reported as unhandled.
    running.catch(() => undefined)
    position += batched
    batch = []
    batched = 0
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
    await running
    await sync?.idle()
    sync?.check()
    return position
  } finally {
    await running.catch(() => undefined)
    await sync?.idle()
  }
}
