import { randomUUID } from 'node:crypto'
import type { XoRecord } from '../driver/types.js'
import type { Static } from '@sinclair/typebox'
import type { Statement } from 'better-sqlite3'
import type { Db } from '../store/database.js'
import type { EventBus } from '../events/bus.js'
import { keepIfEqual, publishDiff } from '../events/diff.js'
import { alreadyExists, noSuchObject, KeelError } from '../errors.js'
import type { CreateUserBody, GroupSchema, PermissionSchema, UpdateUserBody, UserSchema } from '../model/directory.js'
import { hashPassword } from './passwords.js'

export type Permission = Static<typeof PermissionSchema>

export type UserRecord = Readonly<Static<typeof UserSchema>>
export type GroupRecord = Readonly<Static<typeof GroupSchema>>

interface UserRow {
  id: string
  email: string
  name: string | null
  permission: Permission
  password_hash: string
  preferences: string
}

export type UserPatch = Static<typeof UpdateUserBody>

const lastAdmin = (): KeelError =>
  new KeelError('INCORRECT_STATE', 'the last administrator cannot be removed or demoted', {
    actual: 'last administrator',
    expected: 'another administrator',
  })

/**
 * Users and groups in the embedded store. Records are rebuilt into an
 * in-memory index after each committed write, so reads never touch SQLite and
 * each record object stays the same until it changes (the JSON cache relies on that).
 */
export class Directory {
  readonly #db: Db
  readonly #bus: EventBus
  readonly #clock: () => number
  #users = new Map<string, UserRecord>()
  #groups = new Map<string, GroupRecord>()
  // Every password login looks its account up: prepared once.
  readonly #credentials: Statement<[string], Pick<UserRow, 'id' | 'password_hash'>>

  readonly #onTokensRevoked: (userId: string) => void

  /** `onTokensRevoked` hears of tokens ended here (a password change ends its user's tokens), for caches of them. */
  constructor(db: Db, bus: EventBus, clock: () => number, onTokensRevoked: (userId: string) => void = () => {}) {
    this.#db = db
    this.#bus = bus
    this.#clock = clock
    this.#onTokensRevoked = onTokensRevoked
    this.#credentials = db.prepare('SELECT id, password_hash FROM users WHERE email = ?')
    this.#reload()
  }

  users(): Iterable<UserRecord> {
    return this.#users.values()
  }

  groups(): Iterable<GroupRecord> {
    return this.#groups.values()
  }

  user(id: string): UserRecord | undefined {
    return this.#users.get(id)
  }

  group(id: string): GroupRecord | undefined {
    return this.#groups.get(id)
  }

  userCount(): number {
    return this.#users.size
  }

  /** The stored password hash and record for a login name, case-insensitively. */
  credentialsOf(email: string): { user: UserRecord; passwordHash: string } | undefined {
    const row = this.#credentials.get(email)
    const user = row && this.#users.get(row.id)
    return user && row ? { user, passwordHash: row.password_hash } : undefined
  }

  async createUser(input: Static<typeof CreateUserBody>): Promise<string> {
    const passwordHash = await hashPassword(input.password)
    const id = randomUUID()
    this.#write(() => {
      if (this.#emailTaken(input.email)) throw alreadyExists('user', 'email', input.email)
      this.#db
        .prepare(
          'INSERT INTO users (id, email, name, permission, password_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(id, input.email, input.name ?? null, input.permission ?? 'none', passwordHash, this.#clock())
    })
    return id
  }

  async updateUser(id: string, patch: UserPatch): Promise<void> {
    const passwordHash = patch.password === undefined ? undefined : await hashPassword(patch.password)
    this.#write(() => {
      const current = this.#users.get(id)
      if (current === undefined) throw noSuchObject(id, 'user')
      if (patch.email !== undefined && patch.email.toLowerCase() !== current.email.toLowerCase() && this.#emailTaken(patch.email)) {
        throw alreadyExists('user', 'email', patch.email)
      }
      if (patch.permission === 'none' && current.permission === 'admin' && this.#adminCount() === 1) throw lastAdmin()
      const set: string[] = []
      const values: unknown[] = []
      const assign = (column: string, value: unknown): void => {
        set.push(`${column} = ?`)
        values.push(value)
      }
      if (patch.email !== undefined) assign('email', patch.email)
      if (patch.name !== undefined) assign('name', patch.name)
      if (patch.permission !== undefined) assign('permission', patch.permission)
      if (patch.preferences !== undefined) assign('preferences', JSON.stringify(patch.preferences))
      if (passwordHash !== undefined) assign('password_hash', passwordHash)
      if (set.length === 0) return
      this.#db.prepare(`UPDATE users SET ${set.join(', ')} WHERE id = ?`).run(...values, id)
      // A changed password or demotion must end existing sessions' reach.
      if (passwordHash !== undefined) this.#db.prepare('DELETE FROM tokens WHERE user_id = ?').run(id)
    })
    if (passwordHash !== undefined) this.#onTokensRevoked(id)
  }

  deleteUser(id: string): void {
    this.#write(() => {
      const current = this.#users.get(id)
      if (current === undefined) throw noSuchObject(id, 'user')
      if (current.permission === 'admin' && this.#adminCount() === 1) throw lastAdmin()
      this.#db.prepare('DELETE FROM users WHERE id = ?').run(id)
    })
  }

  createGroup(name: string): string {
    const id = randomUUID()
    this.#write(() => {
      if (this.#groupNameTaken(name)) throw alreadyExists('group', 'name', name)
      this.#db.prepare('INSERT INTO groups (id, name, created_at) VALUES (?, ?, ?)').run(id, name, this.#clock())
    })
    return id
  }

  renameGroup(id: string, name: string): void {
    this.#write(() => {
      const current = this.#groups.get(id)
      if (current === undefined) throw noSuchObject(id, 'group')
      if (current.name !== name && this.#groupNameTaken(name)) throw alreadyExists('group', 'name', name)
      this.#db.prepare('UPDATE groups SET name = ? WHERE id = ?').run(name, id)
    })
  }

  deleteGroup(id: string): void {
    this.#write(() => {
      if (!this.#groups.has(id)) throw noSuchObject(id, 'group')
      this.#db.prepare('DELETE FROM groups WHERE id = ?').run(id)
    })
  }

  setMembership(groupId: string, userId: string, member: boolean): void {
    this.#write(() => {
      if (!this.#groups.has(groupId)) throw noSuchObject(groupId, 'group')
      if (!this.#users.has(userId)) throw noSuchObject(userId, 'user')
      const statement = member
        ? 'INSERT OR IGNORE INTO group_users (group_id, user_id) VALUES (?, ?)'
        : 'DELETE FROM group_users WHERE group_id = ? AND user_id = ?'
      this.#db.prepare(statement).run(groupId, userId)
    })
  }

  #emailTaken(email: string): boolean {
    return this.#db.prepare('SELECT 1 FROM users WHERE email = ?').get(email) !== undefined
  }

  #groupNameTaken(name: string): boolean {
    return this.#db.prepare('SELECT 1 FROM groups WHERE name = ?').get(name) !== undefined
  }

  #adminCount(): number {
    let count = 0
    for (const user of this.#users.values()) if (user.permission === 'admin') count++
    return count
  }

  /** Runs a write in one transaction, then refreshes the index and publishes what changed. */
  #write(change: () => void): void {
    this.#db.transaction(change)()
    const before = { users: this.#users, groups: this.#groups }
    this.#reload()
    publishDiff(this.#bus, before.users, this.#users)
    publishDiff(this.#bus, before.groups, this.#groups)
  }

  #reload(): void {
    const rows = this.#db.prepare('SELECT id, email, name, permission, preferences FROM users ORDER BY created_at, id').all() as UserRow[]
    const groupRows = this.#db.prepare('SELECT id, name FROM groups ORDER BY created_at, id').all() as Array<{ id: string; name: string }>
    const links = this.#db.prepare('SELECT group_id, user_id FROM group_users ORDER BY rowid').all() as Array<{
      group_id: string
      user_id: string
    }>
    const groupsOf = new Map<string, string[]>()
    const usersOf = new Map<string, string[]>()
    for (const { group_id, user_id } of links) {
      push(groupsOf, user_id, group_id)
      push(usersOf, group_id, user_id)
    }
    const users = new Map<string, UserRecord>()
    for (const row of rows) {
      const next: UserRecord = {
        id: row.id,
        type: 'user',
        email: row.email,
        ...(row.name === null ? {} : { name: row.name }),
        permission: row.permission,
        groups: groupsOf.get(row.id) ?? [],
        preferences: JSON.parse(row.preferences) as Record<string, unknown>,
      }
      users.set(row.id, keepIfEqual(this.#users.get(row.id), next))
    }
    const groups = new Map<string, GroupRecord>()
    for (const row of groupRows) {
      const next: GroupRecord = { id: row.id, type: 'group', name: row.name, users: usersOf.get(row.id) ?? [] }
      groups.set(row.id, keepIfEqual(this.#groups.get(row.id), next))
    }
    this.#users = users
    this.#groups = groups
  }
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}
