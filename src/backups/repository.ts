import { createHash, randomBytes } from 'node:crypto'
import { constants, createReadStream } from 'node:fs'
import { access, lstat, mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gzipSync } from 'node:zlib'
import { invalidParameters, KeelError } from '../errors.js'
import { VhdChain } from '../formats/vhd/chain.js'
import { invalidDiskStream } from '../formats/stream-error.js'
import { closeAll, listFolder, mergeIntoChild, openVhdFile, syncFolder, type OpenedVhd } from '../formats/vhd/vhd-folder.js'
import { KeyedLock } from '../keyed-lock.js'
import { isUuid } from '../uuid.js'
import { writeChunks, type ChunkWriteOptions } from './chunk-writer.js'
import { confinePath } from './confine.js'
import {
  formatBackupTimestamp,
  isSafeName,
  isTemporaryName,
  isVhdDataName,
  metadataPath,
  parseArchiveId,
  parseVhdPath,
  temporaryDataName,
  temporaryReplacementName,
  vhdPath,
  VM_BACKUPS_DIR,
  xvaOfDataName,
} from './layout.js'
import { isParsed, parseBackupMetadata, type BackupMetadata, type DeltaBackupMetadata, type FullBackupMetadata } from './metadata.js'

export interface ArchiveEntry {
  /** `/xo-vm-backups/<vm>/<ts>.json` */
  readonly metadataPath: string
  readonly metadata: BackupMetadata
}

/** A disk of a delta archive to write: its VHD (full, or differencing over the previous archive's). */
export interface DeltaDisk {
  readonly vdiRef: string
  readonly liveVdiUuid: string
  readonly vhd: AsyncIterable<Buffer>
  readonly differencing: boolean
}

export interface OpenedDisk {
  readonly chain: VhdChain
  close(): Promise<void>
}

/**
 * Writes an archive into a new, empty file from its start, itself (a worker
 * that encodes it, workers/file-output.ts), starting the file's datasync
 * every `syncEvery` bytes; settles with its size once nothing of it writes
 * to `fd` any more. The repository makes it durable and names it.
 */
export type ArchiveFill = (file: { readonly fd: number; readonly syncEvery: number }) => Promise<number>

export type RepositoryStatus = { readonly ok: true } | { readonly ok: false; readonly reason: string }

const METADATA_NAME = /^(\d{8}T\d{6}Z)\.json$/
const BENCHMARK_BYTES = 10 * 1024 * 1024
const XVA_NAME = /^\.\/([^/]+\.xva)$/
/** Deeper than any chain retention keeps; stops a loop of parents. */
const MAX_CHAIN = 10_000

// One writer per VM folder at a time in this process: writes, deletes and
// merges of a folder never interleave, and a temporary file found while
// holding the folder is a leftover of a writer that died.
const folderLocks = new KeyedLock<string>()

/**
 * Bytes of an archive's file between the syncs started while it is written
 * (chunk-writer.ts): its write-back then overlaps the work, and the final
 * sync waits for the tail only. With 64 MiB, a 1 GiB archive's final sync
 * took 2-49 ms against 449-976 ms with none, at no measurable CPU; 256 MiB
 * left tails of up to 159 ms for no gain (bench/RESULTS.md, wip/s38-backup).
 */
const SYNC_EVERY = 64 * 1024 * 1024

/** A new file of `chunks` (lent: each given back once on disk), or filled by `chunks`, synced before this settles; returns its size. */
async function writeSynced(path: string, chunks: AsyncIterable<Buffer> | ArchiveFill, options: ChunkWriteOptions = {}): Promise<number> {
  const file = await open(path, 'wx')
  try {
    const size = typeof chunks === 'function' ? await chunks({ fd: file.fd, syncEvery: SYNC_EVERY }) : await writeChunks(file, chunks, { syncEvery: SYNC_EVERY, ...options })
    // The data and the size; the name is made durable by the folder's sync, before the metadata names the file.
    await file.datasync()
    return size
  } finally {
    await file.close()
  }
}

async function writeDurably(path: string, data: string | Buffer, flag: 'wx' | 'w'): Promise<void> {
  const handle = await open(path, flag)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Replaces a file as a whole: readers see the old content or the new, never a part. */
async function replaceFile(path: string, data: string | Buffer): Promise<void> {
  const temporary = join(dirname(path), temporaryReplacementName(randomBytes(6).toString('hex')))
  try {
    await writeDurably(temporary, data, 'wx')
    await rename(temporary, path)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

/** A folder itself, not a link to one: the clean-up never follows a link to delete. */
async function isPlainFolder(path: string): Promise<boolean> {
  return lstat(path).then((stats) => stats.isDirectory(), () => false)
}

/** The names of a folder's regular files (no links, no folders) among `names`. */
async function regularFiles(folder: string, names: readonly string[]): Promise<Set<string>> {
  const regular = new Set<string>()
  for (const name of names) if (await lstat(join(folder, name)).then((stats) => stats.isFile(), () => false)) regular.add(name)
  return regular
}

/**
 * A write that failed for the repository's sake (full, read-only) says so
 * in words a run's log can show; anything else is passed on as it is.
 */
export function storageError(error: unknown, root: string): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (code === 'ENOSPC' || code === 'EDQUOT') return new KeelError('INCORRECT_STATE', `the backup repository ${root} is full`, { actual: 'full', expected: 'free space', object: root }, { cause: error })
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') return new KeelError('INCORRECT_STATE', `the backup repository ${root} is not writable`, { actual: 'not writable', expected: 'writable', object: root }, { cause: error })
  return error
}

/**
 * The reference's validator: a compressed XVA is only checked for size; a
 * plain one is a tar, so whole 512-byte records ending in two zero records.
 */
async function checkXva(file: string, size: number): Promise<void> {
  if (size <= 20) throw invalidDiskStream(`the XVA is only ${size} bytes`, size)
  const handle = await open(file, 'r')
  try {
    const head = Buffer.alloc(4)
    await handle.read(head, 0, 4, 0)
    if (head.subarray(0, 2).equals(Buffer.from([0x1f, 0x8b])) || head.equals(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]))) return
    if (size % 512 !== 0 || size <= 1024) throw invalidDiskStream(`a plain XVA of ${size} bytes is not whole tar records`, size)
    const tail = Buffer.alloc(1024)
    await handle.read(tail, 0, 1024, size - 1024)
    if (!tail.every((byte) => byte === 0)) throw invalidDiskStream('the XVA does not end with the tar end-of-archive records', size - 1024)
  } finally {
    await handle.close()
  }
}

/** The parent file a VHD of a backup folder names: a bare name in the same folder, nothing else is followed. */
function parentFileName(opened: OpenedVhd): string {
  const name = opened.vhd.header.parentUnicodeName
  if (!isSafeName(name) || !name.endsWith('.vhd')) throw invalidDiskStream(`${opened.name} names its parent ${JSON.stringify(name)}, not a file beside it`, 512 + 64)
  return name
}

async function openBackupChain(folder: string, name: string, inside: (path: string) => Promise<void>): Promise<OpenedDisk> {
  await inside(join(folder, name))
  const leaf = await openVhdFile(folder, name)
  if (leaf === undefined) throw new KeelError('INCORRECT_STATE', `the archive's disk ${name} is missing from ${folder}`, { actual: 'missing', expected: 'present', object: name })
  const files = [leaf]
  try {
    for (let file = leaf; file.vhd.isDifferencing; ) {
      if (files.length > MAX_CHAIN) throw invalidDiskStream(`the chain of ${name} is longer than ${MAX_CHAIN}`, 0)
      const parent = parentFileName(file)
      await inside(join(folder, parent))
      const opened = await openVhdFile(folder, parent)
      if (opened === undefined) throw new KeelError('INCORRECT_STATE', `${file.name} lost its parent ${parent}`, { actual: 'missing', expected: 'present', object: parent })
      files.push(opened)
      file = opened
    }
    return { chain: new VhdChain(files.map((file) => file.vhd)), close: () => closeAll(files) }
  } catch (error) {
    await closeAll(files)
    throw error
  }
}

/**
 * A backup repository on a local folder, in the reference's layout (notes
 * reference-backups.md §1): data is written under a temporary name starting
 * with a dot, checked, renamed; the metadata file comes last, so an archive
 * exists once, and only once, it is whole. Deleting a delta archive merges
 * its disks into the archive that depends on them.
 *
 * Every read and write first checks that what it touches is inside `roots`,
 * resolved through links at that moment: a link along the path may have
 * been swapped since the repository was opened.
 */
export class LocalRepository {
  readonly root: string
  readonly #roots: readonly string[]

  constructor(root: string, roots: readonly string[]) {
    this.root = root
    this.#roots = roots
  }

  async #inside(path: string): Promise<void> {
    await confinePath(path, this.#roots, pathToFileURL(this.root).href)
  }

  async status(): Promise<RepositoryStatus> {
    try {
      if (!(await stat(this.root)).isDirectory()) return { ok: false, reason: `${this.root} is not a folder` }
      await access(this.root, constants.R_OK | constants.W_OK)
      return { ok: true }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT') return { ok: false, reason: `the folder ${this.root} does not exist` }
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return { ok: false, reason: `the folder ${this.root} is not writable` }
      return { ok: false, reason: `the folder ${this.root} cannot be used: ${(error as Error).message}` }
    }
  }

  #vmFolder(vmUuid: string): string {
    if (!isUuid(vmUuid)) throw invalidParameters([{ path: 'vm', message: `${vmUuid} is not a VM UUID` }])
    return join(this.root, VM_BACKUPS_DIR, vmUuid)
  }

  /** Archives, oldest first, of one VM or of all; metadata files that do not parse are skipped. */
  async listArchives(vmUuid?: string): Promise<ArchiveEntry[]> {
    await this.#inside(join(this.root, VM_BACKUPS_DIR))
    const vms = vmUuid === undefined ? (await listFolder(join(this.root, VM_BACKUPS_DIR))).filter(isUuid) : [vmUuid]
    const entries: ArchiveEntry[] = []
    for (const vm of vms) {
      await this.#inside(this.#vmFolder(vm))
      entries.push(...(await this.#archivesIn(vm)))
    }
    return entries.sort((a, b) => a.metadata.timestamp - b.metadata.timestamp)
  }

  async #archivesIn(vmUuid: string): Promise<ArchiveEntry[]> {
    const folder = this.#vmFolder(vmUuid)
    const entries: ArchiveEntry[] = []
    for (const name of await listFolder(folder)) {
      const ts = METADATA_NAME.exec(name)?.[1]
      if (ts === undefined) continue
      let text: string
      try {
        text = await readFile(join(folder, name), 'utf8')
      } catch (error) {
        // Deleted between the listing and the read.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
        throw error
      }
      const metadata = parseBackupMetadata(text)
      if (isParsed(metadata)) entries.push({ metadataPath: metadataPath(vmUuid, ts), metadata })
    }
    return entries.sort((a, b) => a.metadata.timestamp - b.metadata.timestamp)
  }

  #vmOf(metadata: Pick<BackupMetadata, 'vm'>): string {
    const uuid = metadata.vm['uuid']
    if (typeof uuid !== 'string') throw invalidParameters([{ path: 'vm.uuid', message: 'must be a string' }])
    return uuid
  }

  /**
   * Runs `write` holding the VM's folder, made and tidied first, with the
   * archive's names; an archive is never written over.
   */
  async #writing<T>(metadata: Pick<BackupMetadata, 'vm' | 'timestamp'>, write: (names: { folder: string; ts: string; json: string }) => Promise<T>): Promise<T> {
    const folder = this.#vmFolder(this.#vmOf(metadata))
    const ts = formatBackupTimestamp(metadata.timestamp)
    return folderLocks.run(folder, async () => {
      await this.#inside(folder)
      await mkdir(folder, { recursive: true })
      await this.#cleanFolder(folder)
      const json = join(folder, `${ts}.json`)
      if (await exists(json)) throw new KeelError('INCORRECT_STATE', `an archive ${ts} of this VM already exists`, { actual: 'exists', expected: 'absent', object: json })
      return write({ folder, ts, json })
    })
  }

  /**
   * Writes a full archive: the XVA, its checksum, then the metadata. Returns
   * the stored size. `md5` answers the archive's MD5 once it has ended when
   * its producer took it (a worker, off the main thread); without it, it is
   * taken here, from the chunks (an `ArchiveFill` then needs `md5`).
   */
  async writeFull(metadata: FullBackupMetadata, xva: AsyncIterable<Buffer> | ArchiveFill, md5?: () => string | undefined): Promise<{ size: number }> {
    return this.#writing(metadata, async ({ folder, ts, json }) => {
      const data = join(folder, `${ts}.xva`)
      const checksum = `${data}.checksum`
      const temporary = join(folder, temporaryDataName(ts, 'xva', Date.now()))
      let placed = false
      try {
        const hash = md5 === undefined && typeof xva !== 'function' ? createHash('md5') : undefined
        const size = await writeSynced(temporary, xva, hash === undefined ? {} : { each: (chunk) => hash.update(chunk) })
        await checkXva(temporary, size)
        await rename(temporary, data)
        placed = true
        const digest = hash?.digest('hex') ?? md5?.()
        if (digest === undefined) throw new Error('the archive ended without its MD5')
        await writeDurably(checksum, `$1$$${digest}`, 'wx')
        // The archive's files are in the folder on disk before the metadata that makes it visible.
        await syncFolder(folder)
        await writeDurably(json, JSON.stringify({ ...metadata, xva: `./${ts}.xva`, size }), 'wx')
        await syncFolder(folder)
        await this.#writeCache(folder)
        return { size }
      } catch (error) {
        await rm(temporary, { force: true })
        if (placed) await Promise.all([rm(data, { force: true }), rm(checksum, { force: true })])
        throw storageError(error, this.root)
      }
    })
  }

  /**
   * Writes a delta archive: per disk a VHD in `vdis/<job>/<live vdi>/`,
   * each checked (a differencing one must find its parent beside it), then
   * the metadata. Returns the bytes written.
   */
  async writeDelta(metadata: Omit<DeltaBackupMetadata, 'size' | 'vhds' | 'isVhdDifferencing'>, disks: readonly DeltaDisk[]): Promise<{ size: number }> {
    return this.#writing(metadata, async ({ folder, ts, json }) => {
      const placed: string[] = []
      let temporary: string | undefined
      const vhds: Record<string, string> = {}
      const isVhdDifferencing: Record<string, boolean> = {}
      let size = 0
      try {
        for (const disk of disks) {
          const path = vhdPath(metadata.jobId, disk.liveVdiUuid, ts)
          const target = join(folder, path)
          await this.#inside(dirname(target))
          await mkdir(dirname(target), { recursive: true })
          temporary = join(dirname(target), temporaryDataName(ts, 'vhd', Date.now()))
          size += await writeSynced(temporary, disk.vhd)
          await this.#checkVhd(dirname(target), temporary, disk.differencing)
          await rename(temporary, target)
          temporary = undefined
          placed.push(target)
          vhds[disk.vdiRef] = path
          isVhdDifferencing[disk.vdiRef] = disk.differencing
        }
        for (const target of placed) await syncFolder(dirname(target))
        await writeDurably(json, JSON.stringify({ ...metadata, vhds, isVhdDifferencing, size }), 'wx')
        await syncFolder(folder)
        await this.#writeCache(folder)
        return { size }
      } catch (error) {
        if (temporary !== undefined) await rm(temporary, { force: true })
        await Promise.all(placed.map((target) => rm(target, { force: true })))
        throw storageError(error, this.root)
      }
    })
  }

  /** A VHD as written is readable, of the kind announced, and a differencing one finds its parent beside it. */
  async #checkVhd(folder: string, file: string, differencing: boolean): Promise<void> {
    const opened = await openVhdFile(dirname(file), file.slice(dirname(file).length + 1))
    if (opened === undefined) throw new KeelError('INCORRECT_STATE', `${file} vanished while written`, { actual: 'missing', expected: 'present', object: file })
    try {
      if (opened.vhd.isDifferencing !== differencing) throw invalidDiskStream(`the VHD is ${opened.vhd.isDifferencing ? '' : 'not '}differencing`, 512 + 60)
      if (!differencing) return
      const parent = await openVhdFile(folder, parentFileName(opened))
      if (parent === undefined) throw new KeelError('INCORRECT_STATE', `the parent ${opened.vhd.header.parentUnicodeName} of a differencing disk is not in ${folder}`, { actual: 'missing', expected: 'present', object: opened.vhd.header.parentUnicodeName })
      try {
        if (parent.vhd.uuid !== opened.vhd.header.parentUuid) throw invalidDiskStream(`the parent ${parent.name} is ${parent.vhd.uuid}, not ${opened.vhd.header.parentUuid}`, 512 + 40)
      } finally {
        await parent.handle.close()
      }
    } finally {
      await opened.handle.close()
    }
  }

  /** Whether a delta archive's disk, relative to the VM folder, is there to be a parent. */
  async hasDisk(vmUuid: string, path: string): Promise<boolean> {
    return parseVhdPath(path) !== undefined && (await exists(join(this.#vmFolder(vmUuid), path)))
  }

  #metadataFile(path: string): { folder: string; vmUuid: string; ts: string; file: string } {
    const parsed = parseArchiveId(`repository/${path}`)
    if (parsed === undefined) throw invalidParameters([{ path: 'id', message: `${path} is not an archive's metadata path` }])
    const folder = this.#vmFolder(parsed.vmUuid)
    return { folder, vmUuid: parsed.vmUuid, ts: parsed.ts, file: join(folder, `${parsed.ts}.json`) }
  }

  /** The bytes of a full archive's XVA. */
  async openXva(path: string, metadata: FullBackupMetadata): Promise<AsyncIterable<Buffer>> {
    const { folder } = this.#metadataFile(path)
    const name = XVA_NAME.exec(metadata.xva)?.[1]
    if (name === undefined || !isSafeName(name)) throw invalidParameters([{ path: 'xva', message: `${metadata.xva} is not an XVA beside the metadata` }])
    await this.#inside(join(folder, name))
    return createReadStream(join(folder, name), { highWaterMark: 1024 * 1024 })
  }

  /** A delta archive's disk `vdiRef` as one disk: its VHD and the ancestors it names. */
  async openDisk(path: string, metadata: BackupMetadata, vdiRef: string): Promise<OpenedDisk> {
    const { folder } = this.#metadataFile(path)
    if (metadata.mode !== 'delta') throw invalidParameters([{ path: 'mode', message: 'a full archive has no separate disks' }])
    const file = metadata.vhds[vdiRef]
    const parsed = file === undefined ? undefined : parseVhdPath(file)
    if (file === undefined || parsed === undefined) throw invalidParameters([{ path: 'vhds', message: `${vdiRef} has no VHD this repository can read` }])
    if (parsed.name.endsWith('.alias.vhd')) throw new KeelError('INCORRECT_STATE', `${file} is in the VHD directory mode, which Keel does not read`, { actual: 'VHD directory', expected: 'VHD file', object: file })
    return openBackupChain(join(folder, 'vdis', parsed.jobId, parsed.vdiUuid), parsed.name, (file) => this.#inside(file))
  }

  /**
   * Deletes an archive. The metadata goes first (the archive is gone at
   * once); its files follow, and a delta disk a later archive depends on is
   * merged into that archive's disk, which stays restorable.
   */
  async deleteArchive(path: string): Promise<void> {
    const { folder, file } = this.#metadataFile(path)
    await folderLocks.run(folder, async () => {
      await this.#inside(folder)
      let text: string
      try {
        text = await readFile(file, 'utf8')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new KeelError('NO_SUCH_OBJECT', `no archive ${path}`, { id: path })
        throw error
      }
      const metadata = parseBackupMetadata(text)
      await unlink(file)
      await syncFolder(folder)
      if (isParsed(metadata) && metadata.mode === 'full') {
        const name = XVA_NAME.exec(metadata.xva)?.[1]
        if (name !== undefined && isSafeName(name)) await Promise.all([rm(join(folder, name), { force: true }), rm(join(folder, `${name}.checksum`), { force: true })])
      }
      await this.#cleanFolder(folder)
      await this.#writeCache(folder)
    })
  }

  /**
   * Brings every VM folder back to its tidy shape (at start: leftovers of
   * runs cut short). Folders are entered only when they are folders, not
   * links to one.
   */
  async clean(): Promise<void> {
    const vms = join(this.root, VM_BACKUPS_DIR)
    await this.#inside(vms)
    if (!(await isPlainFolder(vms))) return
    for (const vm of (await listFolder(vms)).filter(isUuid)) {
      const folder = this.#vmFolder(vm)
      await folderLocks.run(folder, async () => {
        if (await this.#cleanFolder(folder)) await this.#writeCache(folder)
      })
    }
  }

  /**
   * Removes what Keel's own writers leave, and nothing else: their temporary
   * files; XVAs (and checksums) named as the layout names them that no
   * metadata names; such delta disks no metadata names, merged into the disk
   * that depends on them, or removed when none does. Only regular files are
   * removed, never through a link; anything else stays. Called with the
   * folder held. Returns whether anything changed.
   */
  async #cleanFolder(folder: string): Promise<boolean> {
    if (!(await isPlainFolder(folder))) return false
    await this.#inside(folder)
    let changed = false
    const archives = await this.#archivesIn(basename(folder))
    const xvas = new Set(archives.flatMap(({ metadata }) => (metadata.mode === 'full' ? [XVA_NAME.exec(metadata.xva)?.[1] ?? ''] : [])))
    for (const name of await regularFiles(folder, await listFolder(folder))) {
      const xva = xvaOfDataName(name)
      if (!isTemporaryName(name) && (xva === undefined || xvas.has(xva))) continue
      await rm(join(folder, name), { force: true })
      changed = true
    }
    const used = new Map<string, { entry: ArchiveEntry; ref: string }>()
    for (const entry of archives) if (entry.metadata.mode === 'delta') for (const [ref, path] of Object.entries(entry.metadata.vhds)) used.set(path.replace(/^\.\//, ''), { entry, ref })
    const vdis = join(folder, 'vdis')
    if (await isPlainFolder(vdis)) {
      for (const job of (await listFolder(vdis)).filter(isUuid)) {
        if (!(await isPlainFolder(join(vdis, job)))) continue
        for (const disk of (await listFolder(join(vdis, job))).filter(isUuid)) {
          const diskFolder = join(vdis, job, disk)
          if ((await isPlainFolder(diskFolder)) && (await this.#cleanDiskFolder(diskFolder, `vdis/${job}/${disk}`, used))) changed = true
        }
      }
    }
    if (changed) await syncFolder(folder)
    return changed
  }

  async #cleanDiskFolder(folder: string, relative: string, used: ReadonlyMap<string, { entry: ArchiveEntry; ref: string }>): Promise<boolean> {
    let changed = false
    for (const name of await regularFiles(folder, await listFolder(folder))) {
      if (!isTemporaryName(name)) continue
      await rm(join(folder, name), { force: true })
      changed = true
    }
    for (;;) {
      const names = await listFolder(folder)
      const files = await regularFiles(folder, names)
      const vhds = names.filter((name) => name.endsWith('.vhd') && !isTemporaryName(name)).sort()
      // A disk that is a link or a folder (the reference's VHD directory mode) may depend on any file here, and is not followed to learn which.
      if (vhds.some((name) => !files.has(name))) break
      const parents = new Map<string, string>()
      const unreadable = new Set<string>()
      for (const name of vhds) {
        const opened = await openVhdFile(folder, name).catch(() => {
          unreadable.add(name)
          return undefined
        })
        if (opened === undefined) continue
        try {
          if (opened.vhd.isDifferencing) parents.set(name, opened.vhd.header.parentUnicodeName)
        } finally {
          await opened.handle.close()
        }
      }
      const childOf = (name: string): string | undefined => [...parents].find(([, parent]) => parent === name)?.[0]
      const orphans = vhds.filter((name) => isVhdDataName(name) && !used.has(`${relative}/${name}`))
      // A file that is not a VHD (a write cut short) is only removed when nothing names it; a broken disk an archive uses stays for the archive to report.
      const gone = orphans.find((name) => unreadable.has(name)) ?? orphans.find((name) => childOf(name) === undefined)
      if (gone !== undefined) {
        await unlink(join(folder, gone))
        changed = true
        continue
      }
      // Merged only into a disk named as the layout names them: a file Keel does not know is never replaced.
      const orphan = orphans.find((name) => isVhdDataName(childOf(name) ?? ''))
      const child = orphan === undefined ? undefined : childOf(orphan)
      if (orphan === undefined || child === undefined) break
      await mergeIntoChild(folder, orphan, child)
      changed = true
      const user = used.get(`${relative}/${child}`)
      if (user !== undefined) await this.#afterMerge(user.entry, user.ref, join(folder, child))
    }
    if (changed) await syncFolder(folder)
    return changed
  }

  /** The archive whose disk took its parent's blocks: its metadata says whether the disk is still differencing, and its new size. */
  async #afterMerge(entry: ArchiveEntry, ref: string, disk: string): Promise<void> {
    if (entry.metadata.mode !== 'delta') return
    const folder = dirname(disk)
    const opened = await openVhdFile(folder, disk.slice(folder.length + 1))
    if (opened === undefined) return
    const differencing = opened.vhd.isDifferencing
    await opened.handle.close()
    const { file } = this.#metadataFile(entry.metadataPath)
    const current = parseBackupMetadata(await readFile(file, 'utf8'))
    if (!isParsed(current) || current.mode !== 'delta') return
    const vmFolder = dirname(file)
    let size = 0
    for (const path of Object.values(current.vhds)) size += (await stat(join(vmFolder, path)).catch(() => ({ size: 0 }))).size
    await replaceFile(file, JSON.stringify({ ...current, size, isVhdDifferencing: { ...current.isVhdDifferencing, [ref]: differencing } }))
  }

  /** `cache.json.gz` as the reference keeps it: every archive's metadata under its path, with `_filename` and `id`. */
  async #writeCache(folder: string): Promise<void> {
    const cache: Record<string, unknown> = {}
    for (const { metadataPath: path, metadata } of await this.#archivesIn(basename(folder))) cache[path] = { ...metadata, _filename: path, id: path }
    await replaceFile(join(folder, 'cache.json.gz'), gzipSync(JSON.stringify(cache)))
  }

  /** Writes then reads a 10 MiB test file (the reference's benchmark): bytes per second each way. */
  async benchmark(): Promise<{ readRate: number; writeRate: number }> {
    await this.#inside(this.root)
    const file = join(this.root, `${Date.now()}.test`)
    const data = randomBytes(BENCHMARK_BYTES)
    try {
      const writeStart = process.hrtime.bigint()
      await writeDurably(file, data, 'wx')
      const writeNs = Number(process.hrtime.bigint() - writeStart)
      const readStart = process.hrtime.bigint()
      const read = await readFile(file)
      const readNs = Number(process.hrtime.bigint() - readStart)
      if (!read.equals(data)) throw new KeelError('INCORRECT_STATE', 'the benchmark file read back differs from what was written', { actual: 'different', expected: 'identical' })
      const rate = (ns: number): number => Math.round((BENCHMARK_BYTES * 1e9) / Math.max(ns, 1))
      return { writeRate: rate(writeNs), readRate: rate(readNs) }
    } finally {
      await rm(file, { force: true })
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
  }
}
