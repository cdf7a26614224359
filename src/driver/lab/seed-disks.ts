import { BLOCK_SIZE, blockCount } from '../../formats/blocks.js'
import { diskSize } from '../disk-size.js'
import { writeAll } from '../write-all.js'
import type { DiskRef, LabDisks } from './disks.js'
import type { LabStore } from './store.js'

/** bytes of pattern at the start of a seeded block: the rest stays zero, a hole in the file */
const PATTERN_BYTES = 64 * 1024

/** A block starting with a line naming the disk, repeated: recognizable in any hex dump or raw export. */
export function patternBlock(text: string): Buffer {
  const block = Buffer.alloc(BLOCK_SIZE)
  const line = Buffer.from(`${text}\n`, 'utf8')
  for (let offset = 0; offset < PATTERN_BYTES; offset += line.length) line.copy(block, offset, 0, Math.min(line.length, PATTERN_BYTES - offset))
  return block
}

async function writeBlocks(files: LabDisks, disk: DiskRef, size: number, blocks: ReadonlyMap<number, Buffer>): Promise<void> {
  const writes = [...blocks].sort(([a], [b]) => a - b).map(([index, data]) => ({ index, data }))
  await writeAll(await files.openWrite(disk, size, { patch: true }), writes)
}

/**
 * Gives a freshly seeded lab's disks a little real content: the first and
 * last blocks of every VM disk name it, its snapshots fork from that, and a
 * block written afterwards is what changed since them. A few MiB in all.
 */
export async function seedDiskContent(files: LabDisks, store: LabStore): Promise<void> {
  const userSrs = new Set([...store.objectsOfType('SR')].filter((sr) => sr.content_type !== 'iso').map((sr) => sr.id))
  for (const vdi of store.objectsOfType('VDI')) {
    const size = diskSize(vdi)
    if (typeof vdi.$SR !== 'string' || !userSrs.has(vdi.$SR) || size === 0) continue
    const disk = { id: vdi.id, sr: vdi.$SR }
    const label = `KEEL demo disk ${String(vdi.name_label)} ${vdi.id}`
    const last = blockCount(size) - 1
    await writeBlocks(files, disk, size, new Map([[0, patternBlock(label)], [last, patternBlock(`${label} (last block)`)]]))
    const snapshots = (Array.isArray(vdi.snapshots) ? vdi.snapshots : []).filter(
      (id): id is string => typeof id === 'string' && store.getObject(id)?.$SR === vdi.$SR,
    )
    if (snapshots.length === 0) continue
    const release = await files.fork(disk, snapshots, size)
    // The snapshots' records exist already: nothing to keep the SR busy for.
    release()
    if (last > 1) await writeBlocks(files, disk, size, new Map([[1, patternBlock(`${label} (written after its snapshots)`)]]))
  }
}
