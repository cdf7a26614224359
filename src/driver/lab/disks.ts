import { randomBytes, randomUUID } from 'node:crypto'
import { link, mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { blockCount, type DiskBlock } from '../../formats/blocks.js'
import { readAhead } from '../../formats/read-ahead.js'
import { hasSector, SECTORS_PER_BLOCK } from '../../formats/vhd/bitmap.js'
import { SECTOR_SIZE } from '../../formats/vhd/constants.js'
import { fileHandleAccess } from '../../formats/vhd/random-access.js'
import type { VhdParentReference } from '../../formats/vhd/stream-encoder.js'
import { VhdFile } from '../../formats/vhd/vhd-file.js'
import { KeyedLock } from '../../keyed-lock.js'
import type { DiskReadOptions, DiskWriteSession } from '../types.js'
import { writeAll } from '../write-all.js'
import { collectGarbage, surveyFolder, type FolderFile } from './disk-gc.js'
import { openVhdFile, syncFolder } from '../../formats/vhd/vhd-folder.js'
import { baseFileName, diskFileName, openChain, pathPart, recordIdOf, type OpenedChain } from './disk-files.js'

/** Where a disk's content lives: its record's id and SR. */
export interface DiskRef {
  readonly id: string
  readonly sr: string
}

/** What the files of an SR allocate, for the records' usage figures. */
export interface FolderUsage {
  /** bytes of each disk's own file, by record id */
  readonly own: ReadonlyMap<string, number>
  /** bytes of each disk's file and its ancestors', by record id */
  readonly chain: ReadonlyMap<string, number>
  /** bytes of every disk file in the folder */
  readonly total: number
}

export interface LabDisksHooks {
  /** whether a VDI or VDI snapshot with this id exists: the files of others are garbage */
  exists(id: string): boolean
  /** whether an SR with this id exists: the folder of a forgotten SR is left as it is */
  srExists(id: string): boolean
  /** the files of an SR changed: its records' usage figures follow */
  usageChanged(sr: string, usage: FolderUsage): void
}

/** A write session that keeps its SR busy until its owner releases it. */
export interface HeldWriteSession extends DiskWriteSession {
  /** renames the content into place (durable) but keeps the SR busy */
  finish(): Promise<void>
  /** lets background work on the SR resume; after `commit`/`abort` it is a no-op */
  release(): void
}

function usageOf(files: ReadonlyMap<string, FolderFile>): FolderUsage {
  const own = new Map<string, number>()
  const chain = new Map<string, number>()
  let total = 0
  for (const file of files.values()) {
    total += file.size
    const id = recordIdOf(file.name)
    if (id === undefined) continue
    own.set(id, file.size)
    let bytes = 0
    for (let at: FolderFile | undefined = file; at !== undefined; at = at.parent === undefined ? undefined : files.get(at.parent)) bytes += at.size
    chain.set(id, bytes)
  }
  return { own, chain, total }
}

/** A partial block as a whole one over nothing: the sectors it does not carry are zeros. */
function sectorsOnly(data: Buffer, bitmap: Buffer): Buffer {
  const out = Buffer.alloc(data.length)
  for (let sector = 0; sector < SECTORS_PER_BLOCK; sector++) {
    if (hasSector(bitmap, sector)) data.copy(out, sector * SECTOR_SIZE, sector * SECTOR_SIZE, (sector + 1) * SECTOR_SIZE)
  }
  return out
}

const temporaryName = (name: string): string => `${name}.${randomBytes(6).toString('hex')}.tmp`

/**
 * The lab's disk content: a folder per SR under `<dataDir>/srs`, a VHD per
 * disk (layout in disk-files.ts). A disk never written has no file and reads
 * as zeros, which keeps a lab of many GiB-sized disks a few bytes on disk.
 *
 * Every change to a folder's names (opening a chain included) runs in that
 * folder's queue, one at a time, so a reader never sees half a fork or half a
 * merge. Reads and write sessions keep their SR busy while they run; merging
 * bases waits until nothing is busy.
 */
export class LabDisks {
  readonly #root: string
  readonly #hooks: LabDisksHooks
  readonly #queues = new KeyedLock<string>()
  readonly #busy = new Map<string, number>()
  readonly #untidy = new Set<string>()
  /** tidies started in the background, until they end */
  readonly #tidying = new Set<Promise<void>>()

  constructor(dataDir: string, hooks: LabDisksHooks) {
    this.#root = join(dataDir, 'srs')
    this.#hooks = hooks
  }

  #folder(sr: string): string {
    return join(this.#root, pathPart(sr))
  }

  #hold(sr: string): () => void {
    this.#busy.set(sr, (this.#busy.get(sr) ?? 0) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.#busy.get(sr) ?? 1) - 1
      if (left > 0) {
        this.#busy.set(sr, left)
        return
      }
      this.#busy.delete(sr)
      if (this.#untidy.has(sr)) this.#tidyLater(sr)
    }
  }

  /** Merges what forks and deletions left behind, once nothing uses the SR. */
  #tidyLater(sr: string): void {
    this.#untidy.add(sr)
    if ((this.#busy.get(sr) ?? 0) > 0) return
    const tidying = this.tidy(sr).catch(() => {
      // Left untidy: the chains still read right, and the next tidy or start tries again.
    })
    this.#tidying.add(tidying)
    void tidying.then(() => this.#tidying.delete(tidying))
  }

  /** Waits for the background tidies under way: after a close, another driver may open the folders (a restart in the same process). */
  async settle(): Promise<void> {
    while (this.#tidying.size > 0) await Promise.all(this.#tidying)
  }

  /** Measures an SR's files and hands the figures to the records. */
  async refresh(sr: string): Promise<void> {
    this.#hooks.usageChanged(sr, usageOf(await this.#queues.run(sr, () => surveyFolder(this.#folder(sr)))))
  }

  async #open(disk: DiskRef): Promise<OpenedChain | undefined> {
    return this.#queues.run(disk.sr, () => openChain(this.#folder(disk.sr), diskFileName(disk.id)))
  }

  /** Ascending indexes of the blocks holding data anywhere in the disk's chain, within `size`. */
  async allocation(disk: DiskRef, size: number): Promise<number[]> {
    const opened = await this.#open(disk)
    if (opened === undefined) return []
    try {
      const limit = blockCount(size)
      return opened.chain.allocatedBlocks().filter((index) => index < limit)
    } finally {
      await opened.close()
    }
  }

  /** Blocks that may differ between a disk and another one sharing its ancestry (a snapshot of it): those held by files only one of them reads. */
  async changedBlocks(disk: DiskRef, base: DiskRef, size: number): Promise<number[]> {
    const [mine, theirs] = await Promise.all([this.#open(disk), this.#open(base)])
    try {
      const uuids = (opened: OpenedChain | undefined): Set<string> => new Set(opened?.files.map((file) => file.vhd.uuid) ?? [])
      const shared = [...uuids(mine)].filter((uuid) => uuids(theirs).has(uuid))
      const limit = blockCount(size)
      const changed = new Set<number>()
      for (const opened of [mine, theirs]) {
        for (const file of opened?.files ?? []) {
          if (shared.includes(file.vhd.uuid)) continue
          for (const index of file.vhd.allocatedBlocks()) if (index < limit) changed.add(index)
        }
      }
      return [...changed].sort((a, b) => a - b)
    } finally {
      await Promise.all([mine?.close(), theirs?.close()])
    }
  }

  /** The merged content of `indexes` (ascending), at most `concurrency` reads in flight. */
  async *readBlocks(disk: DiskRef, indexes: readonly number[], options: DiskReadOptions = {}): AsyncGenerator<DiskBlock> {
    if (indexes.length === 0) return
    const release = this.#hold(disk.sr)
    try {
      const opened = await this.#open(disk)
      if (opened === undefined) throw new Error(`disk ${disk.id} has no blocks ${indexes.join(',')}`)
      try {
        const { buffer } = options
        const read = buffer === undefined ? (index: number) => opened.chain.readBlock(index) : async (index: number) => opened.chain.readBlock(index, await buffer())
        for await (const { index, value } of readAhead(indexes, read, options.concurrency ?? 1)) {
          yield { index, data: value }
        }
      } finally {
        await opened.close()
      }
    } finally {
      release()
    }
  }

  /**
   * New content for a disk, in a temporary file of its SR until committed.
   * `patch` keeps the current content under the new blocks (the file becomes
   * a child of a base holding the old content); otherwise unwritten blocks
   * read as zeros afterwards.
   */
  async openWrite(disk: DiskRef, size: number, options: { readonly patch?: boolean } = {}): Promise<HeldWriteSession> {
    const folder = this.#folder(disk.sr)
    const name = diskFileName(disk.id)
    const release = this.#hold(disk.sr)
    let prepared: { handle: FileHandle; vhd: VhdFile; temporary: string; base: string | undefined }
    try {
      prepared = await this.#queues.run(disk.sr, async () => {
        await mkdir(folder, { recursive: true })
        const parent = options.patch === true ? await this.#pinAsBase(folder, name) : undefined
        const temporary = temporaryName(name)
        const created = await createVhd(join(folder, temporary), size, parent)
        return { ...created, temporary, base: parent?.name }
      })
    } catch (error) {
      release()
      throw error
    }
    const { handle, vhd, temporary, base } = prepared
    let state: 'open' | 'finished' | 'ended' = 'open'
    const limit = blockCount(size)
    const finish = async (): Promise<void> => {
      if (state !== 'open') throw new Error('write session already ended')
      state = 'finished'
      try {
        await handle.sync()
        await handle.close()
        await this.#queues.run(disk.sr, async () => {
          await rename(join(folder, temporary), join(folder, name))
          await syncFolder(folder)
        })
      } catch (error) {
        await rm(join(folder, temporary), { force: true })
        state = 'ended'
        release()
        throw error
      }
    }
    return {
      async write(block) {
        if (state !== 'open') throw new Error('write session already ended')
        if (block.index >= limit) throw new RangeError(`block ${block.index} is outside a disk of ${size} bytes`)
        if (block.bitmap === undefined) await vhd.writeBlock(block.index, block.data)
        else if (vhd.isDifferencing) await vhd.writeBlock(block.index, block.data, block.bitmap)
        else await vhd.writeBlock(block.index, sectorsOnly(block.data, block.bitmap))
      },
      finish,
      commit: async () => {
        await finish()
        state = 'ended'
        await this.refresh(disk.sr)
        this.#untidy.add(disk.sr)
        release()
      },
      abort: async () => {
        if (state === 'ended') return
        const was = state
        state = 'ended'
        try {
          if (was === 'open') await handle.close()
          await this.#queues.run(disk.sr, async () => {
            await rm(join(folder, was === 'open' ? temporary : name), { force: true })
            if (base !== undefined && was === 'open') await rm(join(folder, base), { force: true })
          })
          if (was === 'finished') await this.refresh(disk.sr)
        } finally {
          release()
        }
      },
      release,
    }
  }

  /** A second name for a disk's current file, as a base new children can name. */
  async #pinAsBase(folder: string, name: string): Promise<{ name: string; vhd: VhdFile } | undefined> {
    const current = await openVhdFile(folder, name)
    if (current === undefined) return undefined
    await current.handle.close()
    const base = baseFileName(randomUUID())
    await link(join(folder, name), join(folder, base))
    return { name: base, vhd: current.vhd }
  }

  /**
   * Snapshots and fast clones in constant time: the source's file becomes a
   * base, and the source and each target become empty children of it. A
   * target's previous content (a revert) is replaced. The SR stays busy
   * until the returned release is called: a target whose record is not
   * committed yet would otherwise look like garbage to a tidy.
   */
  async fork(source: DiskRef, targets: readonly string[], size: number): Promise<() => void> {
    const folder = this.#folder(source.sr)
    const release = this.#hold(source.sr)
    try {
      await this.#fork(folder, source, targets, size)
    } catch (error) {
      release()
      throw error
    }
    await this.refresh(source.sr)
    this.#tidyLater(source.sr)
    return release
  }

  async #fork(folder: string, source: DiskRef, targets: readonly string[], size: number): Promise<void> {
    await this.#queues.run(source.sr, async () => {
      const names = [source.id, ...targets].map(diskFileName)
      const base = await this.#pinAsBase(folder, diskFileName(source.id))
      if (base === undefined) {
        // Nothing written yet: every one of them reads as zeros, as the source does.
        for (const name of names.slice(1)) await rm(join(folder, name), { force: true })
      } else {
        for (const name of names) {
          const temporary = temporaryName(name)
          const created = await createVhd(join(folder, temporary), size, base)
          await created.handle.sync()
          await created.handle.close()
          await rename(join(folder, temporary), join(folder, name))
        }
      }
      await syncFolder(folder)
    })
  }

  /** A full copy of a disk's merged content under another id (another SR), for disk moves. */
  async copy(source: DiskRef, target: DiskRef, size: number): Promise<void> {
    const indexes = await this.allocation(source, size)
    await writeAll(await this.openWrite(target, size), this.readBlocks(source, indexes))
  }

  /** Removes a disk's file (its record is gone); shared bases are merged later. */
  async remove(disk: DiskRef): Promise<void> {
    const folder = this.#folder(disk.sr)
    await this.#queues.run(disk.sr, async () => {
      await rm(join(folder, diskFileName(disk.id)), { force: true })
      await syncFolder(folder).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      })
    })
    await this.refresh(disk.sr)
    this.#tidyLater(disk.sr)
  }

  /** Merges and removes what nothing needs any more if nothing uses the SR right now (else later), then measures it. */
  async tidy(sr: string): Promise<void> {
    if ((this.#busy.get(sr) ?? 0) > 0) {
      this.#untidy.add(sr)
    } else {
      this.#untidy.delete(sr)
      const folder = this.#folder(sr)
      await this.#queues.run(sr, () => collectGarbage(folder, (id) => this.#hooks.exists(id)))
    }
    await this.refresh(sr)
  }

  /** Every SR folder, tidied and measured (at start-up, after a crash or a hand edit). */
  async recover(): Promise<void> {
    let folders: string[]
    try {
      folders = await readdir(this.#root)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    for (const sr of folders) if (recordIdOf(`${sr}.vhd`) !== undefined && this.#hooks.srExists(sr)) await this.tidy(sr)
  }

  /** A new SR's folder, always under the lab's own directory: its name is the SR's id, never a path from a request. */
  async createSr(sr: string): Promise<void> {
    await mkdir(this.#folder(sr), { recursive: true })
    await syncFolder(this.#root)
  }

  /** A destroyed SR's folder, with every file in it. */
  async destroySr(sr: string): Promise<void> {
    await this.#queues.run(sr, () => rm(this.#folder(sr), { recursive: true, force: true }))
    await syncFolder(this.#root).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    })
  }

}

async function createVhd(path: string, size: number, parent: { name: string; vhd: VhdFile } | undefined): Promise<{ handle: FileHandle; vhd: VhdFile }> {
  const handle = await open(path, 'wx+')
  try {
    const reference: VhdParentReference | undefined =
      parent === undefined ? undefined : { uuid: parent.vhd.uuid, timestamp: parent.vhd.footer.timestamp, name: parent.name }
    const vhd = await VhdFile.create(fileHandleAccess(handle), { size, uuid: randomUUID(), ...(reference === undefined ? {} : { parent: reference }) })
    return { handle, vhd }
  } catch (error) {
    await handle.close()
    await rm(path, { force: true })
    throw error
  }
}
