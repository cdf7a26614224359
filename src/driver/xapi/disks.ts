import { randomUUID } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { invalidParameters, noSuchObject } from '../../errors.js'
import { BLOCK_SIZE, zeros, type DiskBlock } from '../../formats/blocks.js'
import { hasSector, SECTORS_PER_BLOCK } from '../../formats/vhd/bitmap.js'
import { SECTOR_SIZE } from '../../formats/vhd/constants.js'
import { encodeVhdStream, planVhdStream, type VhdParentReference } from '../../formats/vhd/stream-encoder.js'
import type { XvaDescription } from '../../formats/xva/description.js'
import { encodeXva } from '../../formats/xva/xva-writer.js'
import type { Created, DiskAccess, DiskRead, DiskWrite, DiskWriteOptions, DiskWriteSession, ImportSession, NewVdi, XoRecord } from '../types.js'
import { translated } from './errors.js'
import { created, type XapiIndex } from './operations/context.js'
import { BlockSpool } from './spool.js'
import { srHostAddress, vdiHostAddress } from './sr-host.js'
import { Transfer } from './transfer.js'
import { openXapiRead } from './disk-read.js'
import type { XapiLocation, XapiLocator } from './types.js'
import { vhdAllocation } from './vhd-allocation.js'
import { newVdiRecord } from './new-vdi.js'

export interface XapiDisksOptions {
  /** where blocks wait for their upload (default: the system's temporary directory) */
  readonly tempDir?: string
}

/** A partial block's sectors over the current content: set bits from `data`, clear ones from `current`. */
function overlay(current: Buffer, data: Buffer, bitmap: Buffer): Buffer {
  const merged = Buffer.from(current)
  for (let sector = 0; sector < SECTORS_PER_BLOCK; sector++) {
    if (hasSector(bitmap, sector)) data.copy(merged, sector * SECTOR_SIZE, sector * SECTOR_SIZE, (sector + 1) * SECTOR_SIZE)
  }
  return merged
}

/**
 * Disk content on XAPI pools through the host's HTTP handlers, each transfer
 * with a task of its own (transfer.ts). Reads come from `/export_raw_vdi` as
 * VHD: its block allocation table says which blocks hold data (and, with
 * `base=`, which differ from a snapshot), and one stream per read serves
 * the table and then every block asked, one block in memory at a time
 * (disk-read.ts).
 *
 * Writes go to `/import_raw_vdi` as VHD once the session commits: until then
 * the blocks wait in a temporary file (XAPI wants the upload's exact length,
 * and nothing reaches the pool before the commit), so an aborted session
 * leaves the VDI untouched. XAPI writes a VHD's blocks into the VDI as they
 * arrive: a commit whose upload breaks may leave the VDI part written (the
 * simulator keeps it whole); Keel reports the task's failure.
 */
export class XapiDisks implements DiskAccess {
  readonly #locator: XapiLocator
  readonly #index: XapiIndex
  readonly #tempDir: string
  /** reads' tasks being ended after their last block went out */
  readonly #ending = new Set<Promise<void>>()

  constructor(locator: XapiLocator, index: XapiIndex, options: XapiDisksOptions = {}) {
    this.#locator = locator
    this.#index = index
    this.#tempDir = options.tempDir ?? tmpdir()
  }

  allocation(vdi: XoRecord): Promise<number[]> {
    return translated({ object: vdi }, () => this.#allocation(vdi, this.#locate(vdi), {}))
  }

  changedBlocks(vdi: XoRecord, base: XoRecord): Promise<number[]> {
    return translated({ object: vdi }, () => {
      const location = this.#locate(vdi)
      const baseLocation = this.#locate(base)
      if (baseLocation.pool.poolId !== location.pool.poolId) throw invalidParameters([{ path: 'base', message: `${base.id} is not in the pool of ${vdi.id}` }])
      return this.#allocation(vdi, location, { base: baseLocation.ref })
    })
  }

  openRead(vdi: XoRecord): Promise<DiskRead> {
    return this.#openRead(vdi)
  }

  async *readBlocks(vdi: XoRecord, indexes: readonly number[]): AsyncGenerator<DiskBlock> {
    if (indexes.length === 0) return
    yield* (await this.#openRead(vdi)).blocks(indexes)
  }

  /** Resolves once the tasks of the reads that ended are ended on the pool too. */
  async settled(): Promise<void> {
    while (this.#ending.size > 0) await Promise.all(this.#ending)
  }

  async openWrite(vdi: XoRecord, options: DiskWriteOptions = {}): Promise<DiskWriteSession> {
    const location = this.#locate(vdi)
    const patch = options.patch === true
    const spool = await BlockSpool.create(this.#tempDir)
    const bitmaps = new Map<number, Buffer>()
    return {
      write: async (block: DiskWrite) => {
        if (block.bitmap === undefined) bitmaps.delete(block.index)
        else bitmaps.set(block.index, Buffer.from(block.bitmap))
        await spool.put(block.index, block.data)
      },
      commit: async () => {
        try {
          await translated({ object: vdi }, () => this.#replace(vdi, location, spool, bitmaps, patch))
        } finally {
          await spool.remove()
        }
      },
      abort: () => spool.remove(),
    }
  }

  async importVdi(sr: XoRecord, vdi: NewVdi): Promise<ImportSession> {
    const location = this.#locate(sr)
    const spool = await BlockSpool.create(this.#tempDir)
    return {
      write: async (disk, block) => {
        if (disk !== 0) throw new RangeError(`a VDI import has one disk, not disk ${disk}`)
        await spool.put(block.index, block.data)
      },
      commit: async () => {
        try {
          return await translated({ object: sr }, () => this.#createVdi(location, srHostAddress(this.#index, sr), vdi, spool))
        } finally {
          await spool.remove()
        }
      },
      abort: () => spool.remove(),
    }
  }

  async importVm(sr: XoRecord, description: XvaDescription): Promise<ImportSession> {
    const location = this.#locate(sr)
    const spools: BlockSpool[] = []
    const removeAll = async (): Promise<void> => {
      await Promise.all(spools.map((spool) => spool.remove()))
    }
    try {
      while (spools.length < description.disks.length) spools.push(await BlockSpool.create(this.#tempDir))
    } catch (error) {
      await removeAll()
      throw error
    }
    return {
      write: async (disk, block) => {
        const spool = spools[disk]
        if (spool === undefined) throw new RangeError(`the VM has ${spools.length} disks, not disk ${disk}`)
        await spool.put(block.index, block.data)
      },
      commit: async () => {
        try {
          return await translated({ object: sr }, () => this.#importXva(location, srHostAddress(this.#index, sr), description, spools))
        } finally {
          await removeAll()
        }
      },
      abort: removeAll,
    }
  }

  async #openRead(vdi: XoRecord): Promise<DiskRead> {
    const { pool, ref } = await translated({ object: vdi }, async () => this.#locate(vdi))
    return openXapiRead({ vdi, pool, ref, host: vdiHostAddress(this.#index, vdi) }, (ending) => {
      const tracked = ending.finally(() => this.#ending.delete(tracked))
      this.#ending.add(tracked)
    })
  }

  #locate(record: XoRecord): XapiLocation {
    const location = this.#locator.locate(record)
    if (location === undefined) throw noSuchObject(record.id, record.type)
    return location
  }

  /** The allocation table of the VDI's VHD export (a differencing one against `base`). */
  async #allocation(vdi: XoRecord, { pool, ref }: XapiLocation, query: Readonly<Record<string, string>>): Promise<number[]> {
    const transfer = await Transfer.start(pool, 'Keel: VDI allocation', vdiHostAddress(this.#index, vdi))
    try {
      return await vhdAllocation(await transfer.get('/export_raw_vdi', { vdi: ref, format: 'vhd', ...query }))
    } catch (error) {
      throw await transfer.explain(error)
    } finally {
      await transfer.stop()
    }
  }

  /**
   * Uploads the spooled blocks as the VDI's content. XAPI writes the blocks
   * a VHD holds and keeps the others, so a replacement also sends zeros for
   * every block the VDI holds now and the session did not write; a patch is
   * a differencing VHD of the written blocks, a partial one (a bitmap) laid
   * over the block's current content first.
   */
  async #replace(vdi: XoRecord, { pool, ref }: XapiLocation, spool: BlockSpool, bitmaps: ReadonlyMap<number, Buffer>, patch: boolean): Promise<void> {
    const size = Number(await pool.call('VDI.get_virtual_size', [ref]))
    const partial = [...bitmaps.keys()].sort((a, b) => a - b)
    if (patch) {
      for await (const current of this.readBlocks(vdi, partial)) {
        await spool.put(current.index, overlay(current.data, await spool.get(current.index), bitmaps.get(current.index) as Buffer))
      }
    } else {
      for (const index of partial) await spool.put(index, overlay(zeros(), await spool.get(index), bitmaps.get(index) as Buffer))
    }
    const written = spool.indexes
    const allocated = patch ? written : [...new Set([...written, ...(await this.#allocation(vdi, { pool, ref, cls: 'VDI' }, {}))])].sort((a, b) => a - b)
    const parent: VhdParentReference | undefined = patch ? { uuid: vdi.id, timestamp: 0, name: `${vdi.id}.vhd` } : undefined
    await upload({ pool, host: vdiHostAddress(this.#index, vdi) }, ref, size, allocated, spool, parent)
  }

  /** VDI.create, then the content; a VDI whose content did not arrive is destroyed. */
  async #createVdi({ pool, ref: sr }: XapiLocation, host: string | undefined, vdi: NewVdi, spool: BlockSpool): Promise<Created> {
    const record = newVdiRecord({ name_label: vdi.name_label, name_description: vdi.name_description, SR: sr, virtual_size: vdi.size })
    const ref = await pool.callAsync<string>('VDI.create', [record])
    try {
      if (spool.indexes.length > 0) await upload({ pool, host }, ref, vdi.size, spool.indexes, spool)
    } catch (error) {
      await pool.callAsync('VDI.destroy', [ref]).catch(() => undefined)
      throw error
    }
    return created({ locator: this.#locator, index: this.#index }, pool, 'VDI', ref)
  }

  /** The VM as an XVA written to a temporary file (its exact length is needed before the upload), then `/import` on the SR. */
  async #importXva({ pool, ref: sr }: XapiLocation, host: string | undefined, description: XvaDescription, spools: readonly BlockSpool[]): Promise<Created> {
    const dir = await mkdtemp(join(this.#tempDir, 'keel-xapi-xva-'))
    try {
      const path = join(dir, 'vm.xva')
      const contents = description.disks.map((disk, i) => {
        const spool = spools[i] as BlockSpool
        return { size: disk.virtual_size, allocated: spool.indexes, blocks: spool.blocks() }
      })
      await pipeline(Readable.from(encodeXva(description, contents)), createWriteStream(path, { mode: 0o600 }))
      const { size } = await stat(path)
      const transfer = await Transfer.start(pool, 'Keel: VM import', host)
      let result
      try {
        result = await transfer.put('/import', { sr_id: sr }, createReadStream(path), size)
      } catch (error) {
        throw await transfer.explain(error)
      } finally {
        await transfer.close()
      }
      const vm = Array.isArray(result) ? result[0] : result
      if (typeof vm !== 'string') throw new Error(`the VM import answered ${JSON.stringify(result)}`)
      return await created({ locator: this.#locator, index: this.#index }, pool, 'VM', vm)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }
}

/** A VHD of the spooled blocks (zeros for those `allocated` names but the spool lacks) to `/import_raw_vdi` on `host` (srHostAddress). */
async function upload({ pool, host }: { pool: XapiLocation['pool']; host: string | undefined }, vdi: string, size: number, allocated: readonly number[], spool: BlockSpool, parent?: VhdParentReference): Promise<void> {
  const plan = planVhdStream({ size, allocated, uuid: randomUUID(), ...(parent === undefined ? {} : { parent }) })
  async function* blocks(): AsyncGenerator<DiskBlock> {
    for (const index of allocated) yield { index, data: spool.has(index) ? await spool.get(index) : zeros(BLOCK_SIZE) }
  }
  const transfer = await Transfer.start(pool, 'Keel: VDI write', host)
  try {
    await transfer.put('/import_raw_vdi', { vdi, format: 'vhd' }, encodeVhdStream(plan, blocks()), plan.length)
  } catch (error) {
    throw await transfer.explain(error)
  } finally {
    await transfer.close()
  }
}
