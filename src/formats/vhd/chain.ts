import { BLOCK_SIZE } from '../blocks.js'
import { invalidDiskStream } from '../stream-error.js'
import { hasSector, SECTORS_PER_BLOCK } from './bitmap.js'
import { SECTOR_SIZE } from './constants.js'
import type { VhdFile } from './vhd-file.js'

/**
 * A differencing child and its ancestors read as one disk (notes 1.9): for each
 * sector, the first VHD from the child up whose BAT has the block and whose
 * bitmap has the sector supplies it; otherwise zeros.
 */
export class VhdChain {
  /** child first, the dynamic base last */
  readonly files: readonly VhdFile[]

  constructor(files: readonly VhdFile[]) {
    if (files.length === 0) throw new RangeError('a chain needs at least one VHD')
    files.forEach((file, i) => {
      const parent = files[i + 1]
      if (parent === undefined) {
        if (file.isDifferencing) throw invalidDiskStream(`VHD ${file.uuid} is differencing but its parent is missing`, 512 + 40)
        return
      }
      if (!file.isDifferencing) throw invalidDiskStream(`VHD ${file.uuid} is not differencing but has a parent in the chain`, 60)
      if (file.header.parentUuid !== parent.uuid) {
        throw invalidDiskStream(`VHD ${file.uuid} names parent ${file.header.parentUuid}, not ${parent.uuid}`, 512 + 40, { field: 'parentUuid' })
      }
    })
    this.files = files
  }

  get size(): number {
    return (this.files[0] as VhdFile).size
  }

  /** Ascending union of every file's allocated blocks within the child's size. */
  allocatedBlocks(): number[] {
    const limit = Math.ceil(this.size / BLOCK_SIZE)
    const all = new Set<number>()
    for (const file of this.files) for (const index of file.allocatedBlocks()) if (index < limit) all.add(index)
    return [...all].sort((a, b) => a - b)
  }

  /** The merged content of a block, zeros where no VHD of the chain has it; in `into` when given. */
  async readBlock(index: number, into?: Buffer): Promise<Buffer> {
    let merged: Buffer | undefined
    let filled: Uint8Array | undefined
    let missing = SECTORS_PER_BLOCK
    // Only the first stored block is read into `into`: when it must be merged, it is copied out before anything lands there.
    let target = into
    for (const file of this.files) {
      const stored = await file.readBlock(index, target)
      if (stored === undefined) continue
      target = undefined
      const full = !file.isDifferencing || stored.bitmap.every((byte) => byte === 0xff)
      if (merged === undefined && full) return stored.data
      merged ??= Buffer.alloc(BLOCK_SIZE)
      filled ??= new Uint8Array(SECTORS_PER_BLOCK)
      for (let sector = 0; sector < SECTORS_PER_BLOCK; sector++) {
        if (filled[sector] === 1 || !(full || hasSector(stored.bitmap, sector))) continue
        stored.data.copy(merged, sector * SECTOR_SIZE, sector * SECTOR_SIZE, (sector + 1) * SECTOR_SIZE)
        filled[sector] = 1
        missing--
      }
      if (missing === 0) break
    }
    if (into === undefined) return merged ?? Buffer.alloc(BLOCK_SIZE)
    if (merged === undefined) return into.fill(0)
    merged.copy(into)
    return into
  }
}
