import { Readable } from 'node:stream'
import { zeros, type DiskBlock } from '../../formats/blocks.js'
import { giveBack } from '../../formats/lending.js'
import { invalidDiskStream } from '../../formats/stream-error.js'
import { openVhdStream, type VhdStreamReader } from '../../formats/vhd/stream-decoder.js'
import type { DiskRead, XoRecord } from '../types.js'
import { keelErrorOf, translated } from './errors.js'
import { Transfer } from './transfer.js'
import type { XapiPool } from './types.js'

/**
 * Blocks decoded from XAPI's stream ahead of the consumer: without them the
 * stream waits while each block is written out, and an export runs at the
 * sum of both transfers' times instead of the slower one's.
 */
const READ_AHEAD = 2

export interface XapiReadTarget {
  readonly vdi: XoRecord
  readonly pool: XapiPool
  readonly ref: string
  /** the host asked (vdiHostAddress), default the master */
  readonly host: string | undefined
}

/**
 * Where a read's task is ended: off the consumer's path (an export's response
 * ends with its last byte, not two calls later), yet awaited by whoever must
 * know no task is left (the driver's close).
 */
export type TaskEnder = (ending: Promise<void>) => void

/**
 * One `/export_raw_vdi?format=vhd` transfer read as a DiskRead: the head of
 * the VHD stream (footer, header, block allocation table) gives the
 * allocation, and the stream, paused meanwhile (the socket's buffers, then
 * TCP, hold it back), goes on with the blocks.
 */
export async function openXapiRead(target: XapiReadTarget, end: TaskEnder): Promise<DiskRead> {
  const { vdi, pool, ref, host } = target
  const transfer = await translated({ object: vdi }, () => Transfer.start(pool, 'Keel: VDI read', host))
  let reader: VhdStreamReader
  let allocated: number[]
  try {
    reader = await openVhdStream(await transfer.get('/export_raw_vdi', { vdi: ref, format: 'vhd' }))
    allocated = await reader.allocation()
  } catch (error) {
    const broken = keelErrorOf(await transfer.explain(error), { object: vdi })
    await transfer.stop()
    throw broken
  }
  let handed = false
  // Set once the blocks are iterated: a generator returned before its first step never runs its finally, so until then close() ends the transfer.
  let started = false
  return {
    allocated,
    blocks: (indexes) => {
      if (handed) throw new Error('the blocks of a read are read once')
      handed = true
      return relay(vdi, transfer, reader, indexes, end, () => {
        if (started) throw new Error('the read is closed')
        started = true
      })
    },
    close: async () => {
      if (started) return
      started = true
      await transfer.stop()
    },
  }
}

/** The blocks asked from the stream's blocks (in index order, as XAPI sends them), zeros for those it lacks. */
async function* relay(vdi: XoRecord, transfer: Transfer, reader: VhdStreamReader, indexes: readonly number[], end: TaskEnder, begin: () => void): AsyncGenerator<DiskBlock> {
  begin()
  let complete = false
  let ended = false
  const finish = (): void => {
    if (ended) return
    ended = true
    end(complete ? transfer.close() : transfer.stop())
  }
  try {
    if (indexes.length === 0) return
    let next = 0
    let broken: unknown
    try {
      const blocks: AsyncIterable<DiskBlock> = Readable.from(reader.blocks, { highWaterMark: READ_AHEAD })
      let last = -1
      for await (const block of blocks) {
        // XAPI streams blocks in index order; another order would need the whole disk in memory.
        if (block.index <= last) throw invalidDiskStream(`block ${block.index} after block ${last}: the export is not in index order`, 0, { block: block.index })
        last = block.index
        for (let wanted = indexes[next]; wanted !== undefined && wanted < block.index; wanted = indexes[++next]) yield { index: wanted, data: zeros() }
        if (indexes[next] === block.index) {
          next++
          yield block
        } else giveBack(block.data)
        if (next === indexes.length) {
          // Stopped before the read-ahead is drained: the connection goes now, not after another block arrives.
          finish()
          break
        }
      }
      // Read to its end, the stream is complete only once XAPI says the export succeeded.
      if (next < indexes.length) {
        await transfer.outcome()
        complete = true
      }
    } catch (error) {
      broken = await transfer.explain(error)
    }
    if (broken !== undefined) throw broken
    for (let wanted = indexes[next]; wanted !== undefined; wanted = indexes[++next]) yield { index: wanted, data: zeros() }
  } catch (error) {
    throw keelErrorOf(error, { object: vdi })
  } finally {
    finish()
  }
}
