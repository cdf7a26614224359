import type { DiskAccess, DiskWrite, ImportSession, NewVdi, XoRecord } from '../driver/types.js'
import { writeAll } from '../driver/write-all.js'
import { KeelError } from '../errors.js'
import { giveBack } from '../formats/lending.js'
import { isZero } from '../formats/blocks.js'
import { decodeRawStream } from '../formats/raw/raw-decoder.js'
import { invalidDiskStream } from '../formats/stream-error.js'
import { DiskType } from '../formats/vhd/constants.js'
import { openVhdStream } from '../formats/vhd/stream-decoder.js'

export type DiskFormat = 'vhd' | 'raw'

export const diskSizeMismatch = (size: number, expected: number): KeelError =>
  new KeelError('DISK_SIZE_MISMATCH', `the disk is ${size} bytes but the VDI is ${expected} bytes`, { size, expected })

/** The blocks of a whole disk: what is not written reads as zeros, so all-zero blocks are skipped. */
async function* dataBlocks(blocks: AsyncIterable<DiskWrite>): AsyncGenerator<DiskWrite> {
  for await (const block of blocks) if (!isZero(block.data)) yield block
}

/**
 * Writes a VHD or raw stream into a VDI, atomically: a truncated, malformed
 * or wrong-sized stream, or a client that goes away, leaves the VDI exactly as
 * it was. A dynamic VHD or a raw stream replaces the content whole; a
 * differencing VHD (an incremental export) is applied over the current
 * content, every block it holds written as it comes (zeros included). A raw
 * stream's declared length is checked before reading.
 */
export async function importDisk(disks: DiskAccess, vdi: XoRecord, size: number, format: DiskFormat, input: AsyncIterable<Uint8Array>, declaredLength?: number): Promise<void> {
  if (format === 'raw') {
    if (declaredLength !== undefined && declaredLength !== size) throw diskSizeMismatch(declaredLength, size)
    const session = await disks.openWrite(vdi)
    return writeAll(session, dataBlocks(decodeRawStream(input, size)))
  }
  const reader = await openVhdStream(input)
  if (reader.size !== size) throw diskSizeMismatch(reader.size, size)
  const patch = reader.footer.diskType === DiskType.differencing
  const session = await disks.openWrite(vdi, { patch })
  return writeAll(session, patch ? reader.blocks : dataBlocks(reader.blocks))
}

/** Feeds an import session and commits it, or aborts it on any failure. */
export async function feedImport<T extends { readonly data: Buffer }>(session: ImportSession, blocks: AsyncIterable<T>, write: (block: T) => Promise<void>): Promise<void> {
  try {
    for await (const block of blocks) {
      if (!isZero(block.data)) await write(block)
      giveBack(block.data)
    }
  } catch (error) {
    await session.abort()
    throw error
  }
}

/**
 * A new VDI on `sr` from a VHD (dynamic) or raw stream; a raw stream needs
 * its length declared, it is the disk's size. The VDI exists only once every
 * byte is in: a broken stream leaves no VDI and no file.
 */
export async function importNewDisk(
  disks: DiskAccess,
  sr: XoRecord,
  names: Omit<NewVdi, 'size'>,
  format: DiskFormat,
  input: AsyncIterable<Uint8Array>,
  userId: string,
  declaredLength?: number,
): Promise<string> {
  let size: number
  let blocks: AsyncIterable<DiskWrite>
  if (format === 'raw') {
    if (declaredLength === undefined) throw new KeelError('LENGTH_REQUIRED', 'a raw disk upload needs a Content-Length: it is the size of the new disk', { header: 'content-length' })
    size = declaredLength
    blocks = decodeRawStream(input, size)
  } else {
    const reader = await openVhdStream(input)
    if (reader.footer.diskType === DiskType.differencing) throw invalidDiskStream('a differencing VHD needs the disk it applies to: PUT it into a copy of its base', 60, { field: 'diskType' })
    size = reader.size
    blocks = reader.blocks
  }
  const session = await disks.importVdi(sr, { ...names, size }, userId)
  await feedImport(session, blocks, (block) => session.write(0, block))
  return (await session.commit()).id
}
