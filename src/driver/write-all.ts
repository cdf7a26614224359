import { giveBack } from '../formats/lending.js'
import type { DiskWrite, DiskWriteSession } from './types.js'

/**
 * Writes blocks into a session and commits it, or aborts it on any failure:
 * all or nothing. Each block, once written, goes back to its pool if it came
 * from one.
 */
export async function writeAll(session: DiskWriteSession, blocks: AsyncIterable<DiskWrite> | Iterable<DiskWrite>): Promise<void> {
  try {
    for await (const block of blocks) {
      await session.write(block)
      giveBack(block.data)
    }
  } catch (error) {
    await session.abort()
    throw error
  }
  await session.commit()
}
