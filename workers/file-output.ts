import { fdatasync, writevSync } from 'node:fs'
import { promisify } from 'node:util'
import { BackgroundSync } from '../src/backups/background-sync.js'
import type { XvaFile } from '../src/disks/xva.js'
import { piecesAfter } from '../src/formats/vhd/random-access.js'

const datasync = promisify(fdatasync)

/**
 * Bytes gathered per write: 1 MiB, as backups/chunk-writer.ts's writes (a 2
 * MiB write into the page cache cost about twice the system CPU per byte on
 * this machine's kernel).
 */
export const FILE_WRITE_BYTES = 1024 * 1024

/**
 * An archive written into a file by the worker encoding it, with positional
 * writes that block this thread: the kernel copies the bytes into the page
 * cache on this thread, at its priority (workers/thread-priority.ts), where
 * an asynchronous write would copy them on libuv's threads at the process's
 * own, competing with the API's main thread. Pieces are gathered into writes
 * of about FILE_WRITE_BYTES; each `write` sends everything added so far, so
 * a piece whose memory is reused afterwards is safe once it returns.
 *
 * The writes are not gathered to whole MiBs as backups/chunk-writer.ts's are
 * (each 1 MiB chunk goes out with the 1.5 KiB of tar header and `.xxhash`
 * member before it): in a job, gathered, they cost this thread 1.7 s of
 * system CPU per GiB against 0.3 (one run; a file written alone either way
 * costs the same 0.26). Not proven either way: written at once, a chunk is
 * copied from the core's cache its hashing just filled; or that one run's
 * pages came from the free memory, which on this VM costs a writer 1.4-3.0 s
 * per GiB (bench/RESULTS.md, 2026-11-27, wip/s39-backup and 18:07 UTC).
 *
 * As in backups/chunk-writer.ts, the file's datasync starts every
 * `syncEvery` bytes while the writes go on (backups/background-sync.ts;
 * libuv's thread mostly waits on the disk there), and a failed sync fails
 * the archive. The file's last sync, its name and its folder's sync stay
 * with the main thread.
 */
export class FileOutput {
  readonly #fd: number
  readonly #sync: BackgroundSync
  #pending: Buffer[] = []
  #pendingBytes = 0
  #written: Array<() => void> = []
  #position = 0
  #closed = false

  constructor({ fd, syncEvery }: XvaFile) {
    this.#fd = fd
    this.#sync = new BackgroundSync(() => datasync(fd), syncEvery)
  }

  /** Bytes added and not written yet. */
  get pending(): number {
    return this.#pendingBytes
  }

  /** Adds `view` to the next write; `written` runs once it is in the file. */
  add(view: Buffer, written?: () => void): void {
    if (this.#closed) throw new Error('the archive file was given back')
    this.#pending.push(view)
    this.#pendingBytes += view.length
    if (written !== undefined) this.#written.push(written)
  }

  /** Writes everything added, at the file's end; throws a write's error, or a background sync's. */
  write(): void {
    if (this.#closed) throw new Error('the archive file was given back')
    this.#sync.check()
    let buffers: readonly Buffer[] = this.#pending
    let left = this.#pendingBytes
    this.#pending = []
    this.#pendingBytes = 0
    while (left > 0) {
      const wrote = writevSync(this.#fd, buffers, this.#position)
      this.#position += wrote
      left -= wrote
      if (left > 0) buffers = piecesAfter(buffers, wrote)
    }
    const written = this.#written
    this.#written = []
    for (const done of written) done()
    this.#sync.written(this.#position)
  }

  /** Writes what is left and waits for the background sync: the archive's size, or the first error. */
  async finish(): Promise<number> {
    this.write()
    await this.#sync.idle()
    this.#sync.check()
    return this.#position
  }

  /** No write after this; settles once no sync of the file runs, when the main thread may close it. */
  async close(): Promise<void> {
    this.#closed = true
    await this.#sync.idle()
  }
}
