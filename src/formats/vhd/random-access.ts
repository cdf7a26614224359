import type { FileHandle } from 'node:fs/promises'
import { BLOCK_SIZE } from '../blocks.js'
import { blockPool } from '../block-pool.js'

/**
 * Positional I/O on one file, abstract so codecs stay free of fs and tests
 * can use memory. `read` returns fewer bytes than asked only at end of file.
 */
export interface RandomAccess {
  read(position: number, length: number): Promise<Buffer>
  write(position: number, data: Buffer): Promise<void>
  /** current file length in bytes */
  size(): Promise<number>
}

/** RandomAccess over an open file; the caller keeps ownership of the handle. */
export function fileHandleAccess(handle: FileHandle): RandomAccess {
  return {
    async read(position, length) {
      // Whole blocks come from the pool: a stream that is their last user gives them back.
      const buffer = length === BLOCK_SIZE ? blockPool.take() : Buffer.allocUnsafe(length)
      let done = 0
      while (done < length) {
        const { bytesRead } = await handle.read(buffer, done, length - done, position + done)
        if (bytesRead === 0) break
        done += bytesRead
      }
      return done === length ? buffer : buffer.subarray(0, done)
    },
    async write(position, data) {
      let done = 0
      while (done < data.length) {
        const { bytesWritten } = await handle.write(data, done, data.length - done, position + done)
        done += bytesWritten
      }
    },
    async size() {
      return (await handle.stat()).size
    },
  }
}
