import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { migrations } from './migrations.js'

export type Db = Database.Database

export interface OpenOptions {
  /**
   * Commits without an fsync (synchronous=NORMAL): only for a process that
   * holds its answers until a GroupCommit has synced the WAL (the service).
   */
  readonly groupCommit?: boolean
}

/**
 * Opens the embedded store in `dataDir`, in WAL mode, and brings the schema up
 * to date. By default with synchronous=FULL, so that a write done is on disk
 * when the call returns (the command line, the simulator); the service opens
 * it for group commit (src/store/group-commit.ts) and keeps the same promise
 * for its answers without an fsync on the event loop.
 */
export function openDatabase(dataDir: string, options: OpenOptions = {}): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const db = new Database(join(dataDir, 'keel.sqlite'))
  db.pragma('journal_mode = WAL')
  db.pragma(options.groupCommit === true ? 'synchronous = NORMAL' : 'synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  migrate(db)
  return db
}

export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number
  if (current > migrations.length) {
    throw new Error(`data directory schema version ${current} is newer than this Keel (${migrations.length})`)
  }
  for (let version = current; version < migrations.length; version++) {
    db.transaction(() => {
      db.exec(migrations[version] as string)
      db.pragma(`user_version = ${version + 1}`)
    })()
  }
}
