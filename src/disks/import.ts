import type { DiskAccess, DiskWriteSession, XoRecord } from '../driver/types.js'
import { KeelError } from '../errors.js'
import { isZero, type DiskBlock } from '../formats/blocks.js'
import { decodeRawStream } from '../formats/raw/raw-decoder.js'
import { invalidDiskStream } from '../formats/stream-error.js'
import { DiskType } from '../formats/vhd/constants.js'
import { openVhdStream } from '../formats/vhd/stream-decoder.js'

export type DiskFormat = 'vhd' | 'raw'

export const diskSizeMismatch = (size: number, expected: number): KeelError =>
  new KeelError('DISK_SIZE_MISMATCH', `the disk is ${size} bytes but the VDI is ${expected} bytes`, { size, expected })

/** Writes blocks into a session: all or nothing, holes and zero blocks are not written. */
async function writeAll(session: DiskWriteSession, blocks: AsyncIterable<DiskBlock>): Promise<void> {
  try {
    for await (const block of blocks) if (!isZero(block.data)) await session.write(block)
  } catch (error) {
    await session.abort()
    throw error
  }
  await session.commit()
}

async function* wholeVhdBlocks(input: AsyncIterable<Uint8Array>, expected: number): AsyncGenerator<DiskBlock> {
  const reader = await openVhdStream(input)
  if (reader.size !== expected) throw diskSizeMismatch(reader.size, expected)
  if (reader.footer.diskType === DiskType.differencing) throw invalidDiskStream('a differencing VHD cannot replace a whole disk', 60, { field: 'diskType' })
  yield* reader.blocks
}

/**
 * Replaces a VDI's content with a VHD or raw stream, atomically: a truncated,
 * malformed or wrong-sized stream, or a client that goes away, leaves the VDI
 * exactly as it was. A raw stream's declared length is checked before reading.
 */
export async function importDisk(disks: DiskAccess, vdi: XoRecord, size: number, format: DiskFormat, input: AsyncIterable<Uint8Array>, declaredLength?: number): Promise<void> {
  if (format === 'raw' && declaredLength !== undefined && declaredLength !== size) throw diskSizeMismatch(declaredLength, size)
  const session = await disks.openWrite(vdi)
  const blocks = format === 'raw' ? decodeRawStream(input, size) : wholeVhdBlocks(input, size)
  await writeAll(session, blocks)
}
