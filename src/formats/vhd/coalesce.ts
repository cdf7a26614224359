import { invalidDiskStream } from '../stream-error.js'
import { hasSector, SECTORS_PER_BLOCK, setSector } from './bitmap.js'
import { SECTOR_SIZE } from './constants.js'
import type { VhdFile } from './vhd-file.js'

/**
 * Merges a differencing child into its parent (notes 1.10): every child block
 * overwrites (or is appended to) the parent's, sector-merged when the child's
 * bitmap is partial; then the parent takes the child's size, geometry,
 * timestamp and UUID, so it can replace the child file. Block writes are
 * idempotent and the UUID changes last, so an interrupted coalesce can simply
 * be run again. Renaming/deleting files is the caller's business.
 */
export async function coalesce(child: VhdFile, parent: VhdFile): Promise<void> {
  if (!child.isDifferencing) throw invalidDiskStream(`VHD ${child.uuid} is not a differencing disk`, 60, { field: 'diskType' })
  if (child.header.parentUuid !== parent.uuid) {
    throw invalidDiskStream(`VHD ${child.uuid} names parent ${child.header.parentUuid}, not ${parent.uuid}`, 512 + 40, { field: 'parentUuid' })
  }
  if (Math.ceil(child.size / (parent.header.blockSize)) > parent.header.maxTableEntries) {
    throw new RangeError(`parent ${parent.uuid} has too few table entries for the child's ${child.size} bytes`)
  }
  for (const index of child.allocatedBlocks()) {
    const stored = await child.readBlock(index)
    if (stored === undefined) continue
    const full = stored.bitmap.every((byte) => byte === 0xff)
    if (full) {
      await parent.writeBlock(index, stored.data)
      continue
    }
    const base = await parent.readBlock(index)
    const data = base === undefined ? Buffer.alloc(stored.data.length) : Buffer.from(base.data)
    const bitmap = base === undefined ? Buffer.alloc(stored.bitmap.length) : Buffer.from(base.bitmap)
    for (let sector = 0; sector < SECTORS_PER_BLOCK; sector++) {
      if (!hasSector(stored.bitmap, sector)) continue
      stored.data.copy(data, sector * SECTOR_SIZE, sector * SECTOR_SIZE, (sector + 1) * SECTOR_SIZE)
      setSector(bitmap, sector)
    }
    await parent.writeBlock(index, data, parent.isDifferencing ? bitmap : Buffer.alloc(bitmap.length, 0xff))
  }
  const { currentSize, originalSize, geometry, timestamp, uuid } = child.footer
  await parent.updateFooter({ currentSize, originalSize, geometry, timestamp, uuid })
}
