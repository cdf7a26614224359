import { randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { blockCount, type DiskBlock } from '../../formats/blocks.js'
import { readAhead } from '../../formats/read-ahead.js'
import { fileHandleAccess } from '../../formats/vhd/random-access.js'
import { VhdFile } from '../../formats/vhd/vhd-file.js'
import { KeelError } from '../../errors.js'
import type { DiskAccess, DiskReadOptions, DiskWriteSession, XoRecord } from '../types.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** Only a validated UUID ever becomes part of a path. */
function pathPart(id: unknown): string {
  if (typeof id !== 'string' || !UUID.test(id)) throw new KeelError('INVALID_PARAMETERS', `${String(id)} is not a disk identifier`, { errors: [{ path: 'id', message: 'must be a UUID' }] })
  return id
}

function virtualSize(vdi: XoRecord): number {
  const size = vdi.size
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw new Error(`VDI ${vdi.id} has no usable size`)
  return size
}

async function openVhd(path: string): Promise<{ handle: FileHandle; vhd: VhdFile } | undefined> {
  let handle: FileHandle
  try {
    handle = await open(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    return { handle, vhd: await VhdFile.open(fileHandleAccess(handle)) }
  } catch (error) {
    await handle.close()
    throw error
  }
}

/**
 * The lab's disks are real files: a folder per SR under `<dataDir>/srs`, a
 * dynamic VHD per VDI named by its UUID. A VDI never written has no file yet
 * and reads as zeros, which keeps a lab of many GiB-sized disks a few bytes on disk.
 */
export class LabDisks implements DiskAccess {
  readonly #root: string

  constructor(dataDir: string) {
    this.#root = join(dataDir, 'srs')
  }

  #folder(vdi: XoRecord): string {
    return join(this.#root, pathPart(vdi.$SR))
  }

  #file(vdi: XoRecord): string {
    return join(this.#folder(vdi), `${pathPart(vdi.id)}.vhd`)
  }

  async allocation(vdi: XoRecord): Promise<number[]> {
    const opened = await openVhd(this.#file(vdi))
    if (opened === undefined) return []
    try {
      return opened.vhd.allocatedBlocks()
    } finally {
      await opened.handle.close()
    }
  }

  async *readBlocks(vdi: XoRecord, indexes: readonly number[], options: DiskReadOptions = {}): AsyncGenerator<DiskBlock> {
    if (indexes.length === 0) return
    const opened = await openVhd(this.#file(vdi))
    if (opened === undefined) throw new Error(`VDI ${vdi.id} has no blocks ${indexes.join(',')}`)
    const { handle, vhd } = opened
    try {
      const read = async (index: number): Promise<Buffer> => {
        const stored = await vhd.readBlock(index)
        if (stored === undefined) throw new Error(`VDI ${vdi.id} has no block ${index}`)
        return stored.data
      }
      for await (const { index, value } of readAhead(indexes, read, options.concurrency ?? 1)) yield { index, data: value }
    } finally {
      await handle.close()
    }
  }

  async openWrite(vdi: XoRecord): Promise<DiskWriteSession> {
    const size = virtualSize(vdi)
    const folder = this.#folder(vdi)
    const target = this.#file(vdi)
    await mkdir(folder, { recursive: true })
    // In the SR folder so the rename on commit is atomic; the suffix keeps concurrent sessions apart.
    const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`
    const handle = await open(temporary, 'wx+')
    let vhd: VhdFile
    try {
      vhd = await VhdFile.create(fileHandleAccess(handle), { size, uuid: vdi.id })
    } catch (error) {
      await handle.close()
      await rm(temporary, { force: true })
      throw error
    }
    let ended = false
    const end = (): void => {
      if (ended) throw new Error('write session already ended')
      ended = true
    }
    const limit = blockCount(size)
    return {
      async write(block) {
        if (ended) throw new Error('write session already ended')
        if (block.index >= limit) throw new RangeError(`block ${block.index} is outside a disk of ${size} bytes`)
        await vhd.writeBlock(block.index, block.data)
      },
      async commit() {
        end()
        try {
          await handle.sync()
          await handle.close()
          await rename(temporary, target)
        } catch (error) {
          await rm(temporary, { force: true })
          throw error
        }
        const directory = await open(folder, 'r')
        try {
          await directory.sync()
        } finally {
          await directory.close()
        }
      },
      async abort() {
        if (ended) return
        ended = true
        await handle.close()
        await rm(temporary, { force: true })
      },
    }
  }
}
