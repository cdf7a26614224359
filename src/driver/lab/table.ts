import type { Statement } from 'better-sqlite3'
import { migrateComponent } from '../../store/component-migrations.js'
import type { Db } from '../../store/database.js'
import type { XoRecord } from '../types.js'
import { LAB_COMPONENT, labMigrations } from './migrations.js'

const SEEDED_AT = 'seeded_at'

/** One row to write: the record's text, or undefined to delete it. */
export interface LabRow {
  readonly id: string
  readonly type: string
  readonly json: string | undefined
  /** the record changes type: it is written anew so that it takes a new, last place in load order */
  readonly retyped: boolean
}

/**
 * The lab's rows in the store. Opening one brings the lab's tables up to date,
 * so whoever touches them first (the driver, or `keel lab generate`) finds them.
 */
export class LabTable {
  readonly #db: Db
  readonly #upsert: Statement<[string, string, string]>
  readonly #delete: Statement<[string]>

  constructor(db: Db) {
    migrateComponent(db, LAB_COMPONENT, labMigrations)
    this.#db = db
    this.#upsert = db.prepare(
      'INSERT INTO lab_objects (id, type, data) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET type = excluded.type, data = excluded.data',
    )
    this.#delete = db.prepare('DELETE FROM lab_objects WHERE id = ?')
  }

  /** Empty and never seeded: a lab emptied on purpose is not seeded again. */
  needsSeed(): boolean {
    const seeded = this.#db.prepare('SELECT 1 FROM lab_meta WHERE key = ?').get(SEEDED_AT) !== undefined
    const empty = this.#db.prepare('SELECT 1 FROM lab_objects LIMIT 1').get() === undefined
    return empty && !seeded
  }

  /** Replaces the whole content with `records` in one transaction and marks the lab as seeded. */
  replaceAll(records: Iterable<XoRecord>, seededAt: number): void {
    const insert = this.#db.prepare('INSERT INTO lab_objects (id, type, data) VALUES (?, ?, ?)')
    const mark = this.#db.prepare(
      'INSERT INTO lab_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    )
    this.#db.transaction(() => {
      this.#db.prepare('DELETE FROM lab_objects').run()
      for (const record of records) insert.run(record.id, record.type, JSON.stringify(record))
      mark.run(SEEDED_AT, String(seededAt))
    })()
  }

  /** Every record's text, in insertion (rowid) order. */
  texts(): IterableIterator<string> {
    return this.#db.prepare('SELECT data FROM lab_objects ORDER BY rowid').pluck().iterate() as IterableIterator<string>
  }

  /** Writes a batch in one transaction: durable when this returns. */
  write(rows: readonly LabRow[]): void {
    this.#db.transaction(() => {
      for (const { id, type, json, retyped } of rows) {
        if (json === undefined || retyped) this.#delete.run(id)
        if (json !== undefined) this.#upsert.run(id, type, json)
      }
    })()
  }
}
