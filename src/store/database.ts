import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { migrations } from './migrations.js'

export type Db = Database.Database

/**
 * Opens the embedded store in `dataDir`, in WAL mode with synchronous=FULL so
 * that a write a response reports as done survives a power loss, and brings
 * the schema up to date.
 */
export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const db = new Database(join(dataDir, 'keel.sqlite'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  migrate(db)
  return db
}

/**
 * Runs `write` with synchronous=NORMAL: its commit is in the WAL and
 * consistent, but not synced; the next synced commit covers it. For writes
 * no answer reports (a task's progress, a backup log's steps): on a disk
 * busy with a backup's archives, a synced commit stalled the event loop,
 * every request with it, for 100 to 229 ms (bench/RESULTS.md).
 */
export function unsynced<T>(db: Db, write: () => T): T {
  const synchronous = Number(db.pragma('synchronous', { simple: true }))
  db.pragma('synchronous = NORMAL')
  try {
    return write()
  } finally {
    db.pragma(`synchronous = ${synchronous}`)
  }
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
