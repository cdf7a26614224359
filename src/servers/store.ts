import { randomUUID } from 'node:crypto'
import type { Statement } from 'better-sqlite3'
import { alreadyExists, KeelError } from '../errors.js'
import { migrateComponent } from '../store/component-migrations.js'
import type { Db } from '../store/database.js'
import type { SecretBox } from './crypto.js'

/** The last failure of an entry, as the reference serialises it (without the stack). */
export interface ServerError {
  readonly name: string
  readonly message: string
  readonly code?: string
  readonly params?: readonly string[]
}

/** A `servers` entry as stored, its password decrypted only on demand. */
export interface ServerEntry {
  readonly id: string
  readonly host: string
  readonly username: string
  readonly label?: string
  readonly allowUnauthorized: boolean
  readonly readOnly: boolean
  /** connected at start and after failures; a disconnect action clears it, a connect sets it */
  readonly enabled: boolean
  /** SHA-256 of the certificate presented at the first connection: later ones must present it */
  readonly fingerprint?: string
  readonly error?: ServerError
  /** the pool's name when last connected, kept as the reference keeps it */
  readonly poolNameLabel?: string
}

export type EntryChange = Partial<Pick<ServerEntry, 'host' | 'username' | 'allowUnauthorized' | 'readOnly' | 'enabled'>> & {
  readonly label?: string | null
  readonly password?: string
  readonly fingerprint?: string | null
  readonly error?: ServerError | null
  readonly poolNameLabel?: string | null
}

const migrations: readonly string[] = [
  `
  CREATE TABLE servers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL UNIQUE,
    username TEXT NOT NULL,
    password TEXT NOT NULL,
    label TEXT,
    allow_unauthorized INTEGER NOT NULL,
    read_only INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    fingerprint TEXT,
    error TEXT,
    pool_name_label TEXT,
    created_at INTEGER NOT NULL
  );
  `,
]

interface Row {
  id: string
  host: string
  username: string
  password: string
  label: string | null
  allow_unauthorized: number
  read_only: number
  enabled: number
  fingerprint: string | null
  error: string | null
  pool_name_label: string | null
}

function entryOf(row: Row): ServerEntry {
  return {
    id: row.id,
    host: row.host,
    username: row.username,
    ...(row.label === null ? {} : { label: row.label }),
    allowUnauthorized: row.allow_unauthorized === 1,
    readOnly: row.read_only === 1,
    enabled: row.enabled === 1,
    ...(row.fingerprint === null ? {} : { fingerprint: row.fingerprint }),
    ...(row.error === null ? {} : { error: JSON.parse(row.error) as ServerError }),
    ...(row.pool_name_label === null ? {} : { poolNameLabel: row.pool_name_label }),
  }
}

/** The `servers` table; passwords sealed with the key beside the database. */
export class ServerStore {
  readonly #db: Db
  readonly #box: SecretBox
  readonly #clock: () => number
  readonly #select: Statement
  readonly #selectAll: Statement
  readonly #byHost: Statement
  readonly #insert: Statement
  readonly #delete: Statement

  constructor(db: Db, box: SecretBox, clock: () => number) {
    migrateComponent(db, 'servers', migrations)
    this.#db = db
    this.#box = box
    this.#clock = clock
    this.#select = db.prepare('SELECT * FROM servers WHERE id = ?')
    this.#selectAll = db.prepare('SELECT * FROM servers ORDER BY created_at, id')
    this.#byHost = db.prepare('SELECT id FROM servers WHERE host = ? AND id != ?').pluck()
    this.#insert = db.prepare(
      `INSERT INTO servers (id, host, username, password, label, allow_unauthorized, read_only, enabled, created_at)
       VALUES (@id, @host, @username, @password, @label, @allowUnauthorized, @readOnly, 1, @createdAt)`,
    )
    this.#delete = db.prepare('DELETE FROM servers WHERE id = ?')
  }

  all(): ServerEntry[] {
    return (this.#selectAll.all() as Row[]).map(entryOf)
  }

  get(id: string): ServerEntry | undefined {
    const row = this.#select.get(id) as Row | undefined
    return row === undefined ? undefined : entryOf(row)
  }

  /** Throws SERVER_CREDENTIALS_UNREADABLE when the key beside the database is not the one the password was sealed with. */
  password(id: string): string {
    const row = this.#select.get(id) as Row | undefined
    if (row === undefined) throw new Error(`no server ${id}`)
    try {
      return this.#box.open(row.password, id)
    } catch (error) {
      throw new KeelError(
        'SERVER_CREDENTIALS_UNREADABLE',
        'the password of this entry cannot be decrypted with servers.key (replaced or lost?): set it again with PATCH {"password": ...}',
        { id },
        { cause: error },
      )
    }
  }

  create(input: { host: string; username: string; password: string; label?: string; allowUnauthorized: boolean; readOnly: boolean }): ServerEntry {
    this.#refuseDuplicateHost(input.host, '')
    const id = randomUUID()
    this.#insert.run({
      id,
      host: input.host,
      username: input.username,
      password: this.#box.seal(input.password, id),
      label: input.label ?? null,
      allowUnauthorized: input.allowUnauthorized ? 1 : 0,
      readOnly: input.readOnly ? 1 : 0,
      createdAt: this.#clock(),
    })
    return this.get(id) as ServerEntry
  }

  update(id: string, change: EntryChange): ServerEntry {
    if (change.host !== undefined) this.#refuseDuplicateHost(change.host, id)
    const columns: Record<string, string | number | null> = {}
    if (change.host !== undefined) columns['host'] = change.host
    if (change.username !== undefined) columns['username'] = change.username
    if (change.password !== undefined) columns['password'] = this.#box.seal(change.password, id)
    if (change.label !== undefined) columns['label'] = change.label
    if (change.allowUnauthorized !== undefined) columns['allow_unauthorized'] = change.allowUnauthorized ? 1 : 0
    if (change.readOnly !== undefined) columns['read_only'] = change.readOnly ? 1 : 0
    if (change.enabled !== undefined) columns['enabled'] = change.enabled ? 1 : 0
    if (change.fingerprint !== undefined) columns['fingerprint'] = change.fingerprint
    if (change.error !== undefined) columns['error'] = change.error === null ? null : JSON.stringify(change.error)
    if (change.poolNameLabel !== undefined) columns['pool_name_label'] = change.poolNameLabel
    const names = Object.keys(columns)
    if (names.length > 0) {
      this.#db.prepare(`UPDATE servers SET ${names.map((name) => `${name} = @${name}`).join(', ')} WHERE id = @id`).run({ ...columns, id })
    }
    const entry = this.get(id)
    if (entry === undefined) throw new Error(`no server ${id}`)
    return entry
  }

  delete(id: string): void {
    this.#delete.run(id)
  }

  #refuseDuplicateHost(host: string, id: string): void {
    if (this.#byHost.get(host, id) !== undefined) throw alreadyExists('server', 'host', host)
  }
}
