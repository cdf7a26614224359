import type { FileHandle } from 'node:fs/promises'
import { BLOCK_SIZE } from '../blocks.js'
import { blockPool } from '../block-pool.js'

/**
 * Positional I/O on one file, abstract so codecs stay free of fs and tests
 * can use memory. `read` returns fewer bytes than asked only at end of file.
 */
export interface RandomAccess {
  /** reads into `into` (at least `length` bytes) when given */
  read(position: number, length: number, into?: Buffer): Promise<Buffer>
  /** Writes `data` at `position`; several buffers are written one after the other, as one. */
  write(position: number, data: Buffer | readonly Buffer[]): Promise<void>
  /** current file length in bytes */
  size(): Promise<number>
}

/** What is left of `pieces` once their first `written` bytes are written. */
export function piecesAfter(pieces: readonly Buffer[], written: number): readonly Buffer[] {
  let skip = written
  let first = 0
  while (first < pieces.length && skip >= (pieces[first] as Buffer).length) skip -= (pieces[first++] as Buffer).length
  const rest = pieces.slice(first)
  if (skip > 0 && rest.length > 0) rest[0] = (rest[0] as Buffer).subarray(skip)
  return rest
}

/** RandomAccess over an open file; the caller keeps ownership of the handle. */
export function fileHandleAccess(handle: FileHandle): RandomAccess {
  return {
    async read(position, length, into) {
      // Whole blocks come from the pool: a stream that is their last user gives them back.
      const buffer = into ?? (length === BLOCK_SIZE ? blockPool.take() : Buffer.allocUnsafe(length))
      let done = 0
      while (done < length) {
        const { bytesRead } = await handle.read(buffer, done, length - done, position + done)
        if (bytesRead === 0) break
        done += bytesRead
      }
      return done === length ? buffer : buffer.subarray(0, done)
    },
    async write(position, data) {
      // Several buffers go in one writev: joined first, each 2 MiB block cost a fresh buffer and a copy.
      let pieces = Buffer.isBuffer(data) ? [data] : data
      let at = position
      while (pieces.length > 0) {
        const { bytesWritten } = await handle.writev(pieces, at)
        at += bytesWritten
        pieces = piecesAfter(pieces, bytesWritten)
      }
    },
    async size() {
      return (await handle.stat()).size
    },
  }
}
