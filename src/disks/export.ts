import type { DiskAccess, XoRecord } from '../driver/types.js'
import { blocksInRange, rawRange, encodeRawStream, type ByteRange } from '../formats/raw/raw-encoder.js'
import { VHD_EPOCH } from '../formats/vhd/constants.js'
import { encodeVhdStream, planVhdStream } from '../formats/vhd/stream-encoder.js'

export interface DiskStream {
  /** exact byte length */
  readonly length: number
  readonly bytes: AsyncIterable<Buffer>
  /** releases the source when `bytes` is never iterated; nothing once it is */
  close(): Promise<void>
}

const nothingHeld = async (): Promise<void> => undefined

export interface ExportOptions {
  readonly concurrency: number
  readonly now: number
}

/** A VDI as a dynamic VHD stream: the allocation is read first, so the length is exact before any block. */
export async function exportVhd(disks: DiskAccess, vdi: XoRecord, size: number, options: ExportOptions): Promise<DiskStream> {
  const allocated = await disks.allocation(vdi)
  const plan = planVhdStream({ size, allocated, uuid: vdi.id, now: options.now })
  return { length: plan.length, bytes: encodeVhdStream(plan, disks.readBlocks(vdi, allocated, { concurrency: options.concurrency })), close: nothingHeld }
}

/**
 * A VDI's raw bytes, or `range` of them, from one read (the allocation, then
 * the blocks): only the allocated blocks the range touches are asked for. On
 * XAPI the blocks before the range still cross the wire, skipped: the pool's
 * export has no ranges.
 */
export async function exportRaw(disks: DiskAccess, vdi: XoRecord, size: number, options: ExportOptions, range?: ByteRange): Promise<DiskStream> {
  const { start, end } = rawRange(size, range)
  const read = await disks.openRead(vdi)
  const allocated = blocksInRange(read.allocated, { start, end })
  const blocks = read.blocks(allocated, { concurrency: options.concurrency })
  return { length: end - start, bytes: encodeRawStream({ size, allocated, blocks }, { start, end }), close: () => read.close() }
}

/**
 * The blocks changed since `base` (a snapshot of the VDI) as a differencing
 * VHD whose parent is the base's own VHD export (its footer UUID is the
 * snapshot's id), named `parentName` (default `<base id>.vhd`): applied on a
 * copy of the base, it gives the current content.
 */
export async function exportVhdDelta(
  disks: DiskAccess,
  vdi: XoRecord,
  base: XoRecord,
  size: number,
  options: ExportOptions & { readonly parentName?: string },
): Promise<DiskStream> {
  const changed = await disks.changedBlocks(vdi, base)
  const taken = typeof base.snapshot_time === 'number' ? base.snapshot_time : 0
  const parent = { uuid: base.id, timestamp: Math.max(0, taken - VHD_EPOCH), name: options.parentName ?? `${base.id}.vhd` }
  const plan = planVhdStream({ size, allocated: changed, uuid: vdi.id, parent, now: options.now })
  return { length: plan.length, bytes: encodeVhdStream(plan, disks.readBlocks(vdi, changed, { concurrency: options.concurrency })), close: nothingHeld }
}
