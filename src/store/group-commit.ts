import { existsSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import type { Db } from './database.js'

/** Makes every frame in the WAL file durable; resolves once it is. */
export type WalSync = () => Promise<void>

export interface GroupCommitOptions {
  /** instead of an fdatasync of the `-wal` file (tests hold it or fail it) */
  readonly sync?: WalSync
  /** told once, after the answers waiting were refused, of the first sync that failed */
  readonly onFailure: (error: Error) => void
}

/**
 * Group commit: the connection commits with `synchronous = NORMAL` (frames
 * appended to the `-wal` file, no fsync), and an answer that ends while
 * commits are not yet on disk waits for one asynchronous fdatasync of the WAL
 * on libuv's thread pool, shared by every answer waiting. A sync covers the
 * commits made before it started (the connection's `total_changes()` then);
 * answers that need later ones wait for the next, which starts when it ends.
 * `total_changes()` counts the rows every commit of this connection changed:
 * the only commits that change none are schema changes, made at open before
 * the first sync. Other processes on the store (the command line) commit with
 * synchronous=FULL themselves.
 *
 * Why syncing the `-wal` file is enough (https://www.sqlite.org/pragma.html#pragma_synchronous,
 * https://www.sqlite.org/wal.html):
 * - Under NORMAL a process crash loses nothing (committed frames are in the page cache) and
 *   the database file is never corrupted: SQLite syncs the WAL before each checkpoint and the
 *   database after it. So a checkpoint, ours or the autocheckpoint inside a commit, leaves every
 *   frame before it durable, and the WAL is only restarted from its start or truncated
 *   (`journal_size_limit`) after a complete checkpoint: the file we sync is the same inode, and
 *   whatever a restart overwrote was already durable.
 * - fsync applies to the file, whatever descriptor wrote it: ours covers SQLite's writes and
 *   those of other processes on the same store. fdatasync also flushes the file's size, which
 *   appending changes (SQLite itself syncs its WAL with fdatasync on Linux).
 * - The WAL file is removed only when the last connection closes; ours stays open until
 *   `close()` has synced.
 * - The WAL file is never locked by SQLite (its locks are on the database and `-shm` files), so
 *   opening and closing a descriptor on it cannot drop SQLite's POSIX locks, as closing one on
 *   the database file would.
 */
export class GroupCommit {
  readonly #db: Db
  readonly #changes: () => number
  readonly #sync: WalSync
  readonly #onFailure: (error: Error) => void
  readonly #file: FileHandle | undefined
  /** total_changes() that the last completed sync covers */
  #synced: number
  /** total_changes() when the sync in flight started */
  #covering = 0
  #inFlight: Promise<void> | undefined
  #next: Promise<void> | undefined
  #failure: Error | undefined
  #final: Promise<void> | undefined

  private constructor(db: Db, changes: () => number, synced: number, sync: WalSync, file: FileHandle | undefined, onFailure: (error: Error) => void) {
    this.#db = db
    this.#changes = changes
    this.#synced = synced
    this.#sync = sync
    this.#file = file
    this.#onFailure = onFailure
  }

  /**
   * Starts group commit on `db`, which must be in WAL mode with `synchronous = NORMAL`
   * (openDatabase with `groupCommit`). Syncs what the WAL holds first: frames a killed process
   * left in the page cache are not on disk until then.
   */
  static async open(db: Db, options: GroupCommitOptions): Promise<GroupCommit> {
    const statement = db.prepare('SELECT total_changes()').pluck()
    const changes = (): number => statement.get() as number
    let file: FileHandle | undefined
    let sync = options.sync
    if (sync === undefined) {
      // Any read in WAL mode makes SQLite open (and create) the -wal file, and openDatabase read the schema version.
      const wal = `${db.name}-wal`
      if (!existsSync(wal)) throw new Error(`${wal} does not exist: is the store in WAL mode?`)
      const handle = await open(wal, 'r')
      file = handle
      sync = () => handle.datasync()
    }
    const covering = changes()
    try {
      await sync()
    } catch (error) {
      await file?.close()
      throw error
    }
    return new GroupCommit(db, changes, covering, sync, file, options.onFailure)
  }

  /**
   * Undefined when every commit so far is on disk; otherwise a promise that resolves once a sync
   * covering them has completed, and rejects (with the same error every time) once one failed.
   */
  wait(): Promise<void> | undefined {
    // Inside a transaction total_changes() counts rows not yet committed: a sync started then could
    // run before their frames are written and still be taken to cover them.
    if (this.#db.inTransaction) throw new Error('an answer may not end inside a store transaction')
    // Closed under the service (a failing store, as /healthz reports): its commits can no longer be
    // counted, so one last sync covers them all.
    if (!this.#db.open) {
      this.#final ??= this.#sync().catch((error: unknown) => {
        throw this.#fail(error)
      })
      return this.#final
    }
    const needed = this.#changes()
    if (needed <= this.#synced) return undefined
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    if (this.#next !== undefined) return this.#next
    if (this.#inFlight === undefined) return this.#start()
    if (needed <= this.#covering) return this.#inFlight
    this.#next = this.#inFlight.then(() => {
      this.#next = undefined
      return this.#start()
    })
    return this.#next
  }

  /** Waits for the syncs under way, syncs what is left and closes the WAL's descriptor; the caller closes the database next. */
  async close(): Promise<void> {
    try {
      await this.wait()
    } catch {
      // Already reported through onFailure, and every answer that needed it was refused.
    } finally {
      await this.#file?.close()
    }
  }

  #start(): Promise<void> {
    const covering = this.#changes()
    this.#covering = covering
    const sync = this.#sync().then(
      () => {
        this.#synced = covering
        this.#inFlight = undefined
      },
      (error: unknown) => {
        this.#inFlight = undefined
        throw this.#fail(error)
      },
    )
    this.#inFlight = sync
    return sync
  }

  /**
   * After a failed fsync the kernel may have dropped the dirty pages it could not write and
   * report the next fsync as a success (https://lwn.net/Articles/752063/, PostgreSQL's
   * "fsyncgate"): no later sync can vouch for these commits, nor for later ones whose frames
   * follow them in the WAL. So the store stays failed, and the owner is told, to stop the process:
   * at the next start SQLite recovers the WAL up to its last valid frame.
   */
  #fail(error: unknown): Error {
    if (this.#failure === undefined) {
      this.#failure = error instanceof Error ? error : new Error(String(error))
      const failure = this.#failure
      // After the waiting answers' own handlers have run, so that they are refused first.
      setImmediate(() => this.#onFailure(failure))
    }
    return this.#failure
  }
}
