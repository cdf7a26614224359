import type { Statement } from 'better-sqlite3'
import type { XoRecord } from '../driver/types.js'
import type { EventBus } from '../events/bus.js'
import type { BackupJob, BackupLog, BackupRepository, RestoreLog, Schedule } from '../model/backups.js'
import { unsynced, type Db } from '../store/database.js'
import { migrateComponent } from '../store/component-migrations.js'

const MIGRATIONS = [
  `
  CREATE TABLE backup_records (
    type TEXT NOT NULL,
    id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (type, id)
  );
  CREATE TABLE backup_bases (
    job_id TEXT NOT NULL,
    vm_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (job_id, vm_id)
  );
  `,
  // the installation that wrote a backup or restore log: a start interrupts only its own runs
  'ALTER TABLE backup_records ADD COLUMN installation_id TEXT',
]

/** Records one installation's run writes; the others (repositories, jobs, schedules) are everyone's. */
const RUN_LOGS: ReadonlySet<BackupRecordType> = new Set(['backup-log', 'restore-log'])

/** What the store keeps, by record type. */
export interface BackupRecords {
  'backup-repository': BackupRepository
  backup: BackupJob
  schedule: Schedule
  'backup-log': BackupLog
  'restore-log': RestoreLog
}
export type BackupRecordType = keyof BackupRecords

/** Where a delta job's next run starts from, per VM: the snapshot kept as base and the runs since the last full. */
export interface DeltaBase {
  readonly snapshotId: string
  /** timestamp of the archive written from it, per repository */
  readonly timestamps: Readonly<Record<string, number>>
  readonly deltas: number
}

/**
 * Repositories, jobs, schedules and logs: persisted before anyone sees them,
 * then published on the event bus, so they list, watch and stream like every
 * other collection. Records are frozen and replaced whole on change. A log
 * keeps the installation that wrote it (in its row, not its record).
 */
export class BackupStore {
  readonly #db: Db
  readonly #bus: EventBus
  readonly #records = new Map<BackupRecordType, Map<string, XoRecord>>()
  readonly #installationId: string
  /** `type/id` of the logs another installation wrote */
  readonly #foreign = new Set<string>()
  readonly #upsert: Statement<[string, string, string, string | null]>
  readonly #delete: Statement<[string, string]>
  readonly #getBase: Statement<[string, string]>
  readonly #putBase: Statement<[string, string, string]>
  readonly #deleteBase: Statement<[string, string]>
  readonly #allBases: Statement<[]>
  #closed = false

  constructor(db: Db, bus: EventBus, installationId: string) {
    this.#db = db
    this.#bus = bus
    this.#installationId = installationId
    migrateComponent(db, 'backups', MIGRATIONS)
    // Logs from before installations were recorded come from the one Keel that used this database then: this data directory's.
    db.prepare(`UPDATE backup_records SET installation_id = ? WHERE installation_id IS NULL AND type IN (${[...RUN_LOGS].map(() => '?').join(', ')})`).run(installationId, ...RUN_LOGS)
    // The writer of a log is set once, when it is created.
    this.#upsert = db.prepare('INSERT INTO backup_records (type, id, data, installation_id) VALUES (?, ?, ?, ?) ON CONFLICT (type, id) DO UPDATE SET data = excluded.data')
    this.#delete = db.prepare('DELETE FROM backup_records WHERE type = ? AND id = ?')
    this.#getBase = db.prepare('SELECT data FROM backup_bases WHERE job_id = ? AND vm_id = ?').pluck() as Statement<[string, string]>
    this.#putBase = db.prepare('INSERT INTO backup_bases (job_id, vm_id, data) VALUES (?, ?, ?) ON CONFLICT (job_id, vm_id) DO UPDATE SET data = excluded.data')
    this.#deleteBase = db.prepare('DELETE FROM backup_bases WHERE job_id = ? AND vm_id = ?')
    this.#allBases = db.prepare('SELECT data FROM backup_bases').pluck() as Statement<[]>
    for (const row of db.prepare('SELECT type, id, data, installation_id FROM backup_records ORDER BY rowid').all() as Array<{ type: BackupRecordType; id: string; data: string; installation_id: string | null }>) {
      this.#map(row.type).set(row.id, Object.freeze(JSON.parse(row.data) as XoRecord))
      if (RUN_LOGS.has(row.type) && row.installation_id !== installationId) this.#foreign.add(`${row.type}/${row.id}`)
    }
  }

  #map(type: BackupRecordType): Map<string, XoRecord> {
    let map = this.#records.get(type)
    if (map === undefined) this.#records.set(type, (map = new Map()))
    return map
  }

  list<T extends BackupRecordType>(type: T): Iterable<BackupRecords[T]> {
    return this.#map(type).values() as Iterable<BackupRecords[T]>
  }

  get<T extends BackupRecordType>(type: T, id: string): BackupRecords[T] | undefined {
    return this.#map(type).get(id) as BackupRecords[T] | undefined
  }

  /**
   * Stores a record (new or replacing), durably unless `synced` is false (a
   * state no answer reports, which the next synced commit covers), then
   * publishes it; once closed, changes are dropped (a restart sees the last
   * stored state).
   */
  put<T extends BackupRecordType>(record: BackupRecords[T] & { readonly type: T }, { synced = true }: { readonly synced?: boolean } = {}): BackupRecords[T] {
    const text = JSON.stringify(record)
    const frozen = Object.freeze(JSON.parse(text) as XoRecord)
    if (this.#closed) return frozen as BackupRecords[T]
    const upsert = (): unknown => this.#upsert.run(record.type, record.id, text, RUN_LOGS.has(record.type) ? this.#installationId : null)
    if (synced) upsert()
    else unsynced(this.#db, upsert)
    const map = this.#map(record.type)
    const previous = map.get(record.id)
    map.set(record.id, frozen)
    this.#bus.publish(previous === undefined ? { kind: 'add', object: frozen } : { kind: 'update', object: frozen, previous })
    return frozen as BackupRecords[T]
  }

  /** Whether this installation wrote the log (a run of its own). */
  isOwnLog(type: 'backup-log' | 'restore-log', id: string): boolean {
    return this.#map(type).has(id) && !this.#foreign.has(`${type}/${id}`)
  }

  remove(type: BackupRecordType, id: string): void {
    const map = this.#map(type)
    const previous = map.get(id)
    if (previous === undefined || this.#closed) return
    this.#delete.run(type, id)
    map.delete(id)
    this.#foreign.delete(`${type}/${id}`)
    this.#bus.publish({ kind: 'remove', object: previous, previous })
  }

  close(): void {
    this.#closed = true
  }

  base(jobId: string, vmId: string): DeltaBase | undefined {
    const text = this.#getBase.get(jobId, vmId) as string | undefined
    return text === undefined ? undefined : (JSON.parse(text) as DeltaBase)
  }

  setBase(jobId: string, vmId: string, base: DeltaBase | undefined): void {
    if (this.#closed) return
    if (base === undefined) this.#deleteBase.run(jobId, vmId)
    else this.#putBase.run(jobId, vmId, JSON.stringify(base))
  }

  /** Every base snapshot some delta job keeps for its next run. */
  baseSnapshots(): Set<string> {
    return new Set((this.#allBases.all() as string[]).map((text) => (JSON.parse(text) as DeltaBase).snapshotId))
  }

  /** A fresh log id: the start time in ms, suffixed when two runs start in the same ms. */
  logId(type: 'backup-log' | 'restore-log', start: number): string {
    const map = this.#map(type)
    let id = String(start)
    for (let n = 1; map.has(id); n++) id = `${start}:${n}`
    return id
  }
}
