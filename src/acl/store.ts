import { randomUUID } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import type { Directory } from '../auth/users.js'
import type { EventBus } from '../events/bus.js'
import { keepIfEqual, publishDiff } from '../events/diff.js'
import { KeelError, forbidden, invalidParameters, noSuchObject } from '../errors.js'
import { compileFilter } from '../filter/index.js'
import type {
  AclAuditSchema,
  AclPrivilegeSchema,
  AclRoleSchema,
  CreatePrivilegeBody,
  CreateRoleBody,
  UpdatePrivilegeBody,
  UpdateRoleBody,
} from '../model/acl.js'
import type { Db } from '../store/database.js'
import { isGrantableAction } from './catalogue.js'
import { PrivilegeSet } from './evaluate.js'
import { roleTemplates } from './templates.js'

export type RoleRecord = Readonly<Static<typeof AclRoleSchema>>
export type PrivilegeRecord = Readonly<Static<typeof AclPrivilegeSchema>>
export type AuditRecord = Readonly<Static<typeof AclAuditSchema>>

interface RoleRow {
  id: string
  name: string
  description: string | null
  template_id: number | null
}

interface PrivilegeRow {
  id: string
  role_id: string
  resource: string
  action: string
  effect: 'allow' | 'deny'
  selector: string | null
}

interface AuditRow {
  seq: number
  time: number
  actor_id: string
  operation: string
  object_type: string
  object_id: string
  before: string | null
  after: string | null
}

/** Who makes a change: recorded in the audit trail. */
export interface Actor {
  readonly id: string
}

const templateRefusal = (operation: string): KeelError =>
  forbidden(`forbidden operation: ${operation}`, { operation, reason: 'role is a template' })

function toPrivilege(row: PrivilegeRow): PrivilegeRecord {
  return {
    id: row.id,
    type: 'acl-privilege',
    roleId: row.role_id,
    resource: row.resource,
    action: row.action,
    effect: row.effect,
    ...(row.selector === null ? {} : { selector: row.selector }),
  }
}

function toAudit(row: AuditRow): AuditRecord {
  return Object.freeze({
    id: String(row.seq).padStart(12, '0'),
    type: 'acl-audit' as const,
    time: row.time,
    actorId: row.actor_id,
    operation: row.operation,
    objectType: row.object_type,
    objectId: row.object_id,
    ...(row.before === null ? {} : { before: JSON.parse(row.before) as unknown }),
    ...(row.after === null ? {} : { after: JSON.parse(row.after) as unknown }),
  })
}

/**
 * Roles, privileges and their assignments in the embedded store, served from
 * memory. Every change is written with its audit entry in one transaction,
 * then the index is rebuilt and the differences published, like the users
 * directory. `version` moves with every change that can change what someone
 * may do (including group membership), so scopes derived from it can be cached.
 */
export class AccessControl {
  readonly #db: Db
  readonly #bus: EventBus
  readonly #directory: Directory
  readonly #clock: () => number
  #roles = new Map<string, RoleRecord>()
  #privileges = new Map<string, PrivilegeRecord>()
  #rolesOfUser = new Map<string, string[]>()
  #rolesOfGroup = new Map<string, string[]>()
  readonly #audit: AuditRecord[] = []
  #version = 0
  readonly #scopes = new Map<string, { version: number; scope: PrivilegeSet }>()
  readonly #unsubscribe: () => void

  constructor(db: Db, bus: EventBus, directory: Directory, clock: () => number) {
    this.#db = db
    this.#bus = bus
    this.#directory = directory
    this.#clock = clock
    this.#reconcileTemplates()
    this.#reload()
    const rows = db.prepare('SELECT * FROM acl_audit ORDER BY seq').all() as AuditRow[]
    for (const row of rows) this.#audit.push(toAudit(row))
    // Deleting a user or group cascades to its assignments; membership changes move scopes.
    this.#unsubscribe = bus.subscribe((change) => {
      const type = change.object.type
      if (type !== 'user' && type !== 'group') return
      this.#version++
      if (change.kind === 'remove') this.#refresh()
    })
  }

  close(): void {
    this.#unsubscribe()
  }

  /** Moves whenever what any user may do can have changed. */
  get version(): number {
    return this.#version
  }

  roles(): Iterable<RoleRecord> {
    return this.#roles.values()
  }

  role(id: string): RoleRecord | undefined {
    return this.#roles.get(id)
  }

  privileges(): Iterable<PrivilegeRecord> {
    return this.#privileges.values()
  }

  privilege(id: string): PrivilegeRecord | undefined {
    return this.#privileges.get(id)
  }

  audit(): Iterable<AuditRecord> {
    return this.#audit
  }

  auditEntry(id: string): AuditRecord | undefined {
    const index = Number(id) - 1
    return /^\d{12}$/.test(id) ? this.#audit[index] : undefined
  }

  rolesOfGroup(groupId: string): RoleRecord[] {
    return (this.#rolesOfGroup.get(groupId) ?? []).flatMap((id) => this.#roles.get(id) ?? [])
  }

  /** The privileges reaching a user: through their own roles and their groups' roles. */
  effectivePrivileges(userId: string): PrivilegeRecord[] {
    const roleIds = new Set(this.#rolesOfUser.get(userId) ?? [])
    for (const groupId of this.#directory.user(userId)?.groups ?? []) {
      for (const roleId of this.#rolesOfGroup.get(groupId) ?? []) roleIds.add(roleId)
    }
    return [...roleIds].flatMap((roleId) => this.#roles.get(roleId)?.privilegeIds ?? []).flatMap((id) => this.#privileges.get(id) ?? [])
  }

  /** A user's effective privileges, ready to evaluate; rebuilt only when `version` moved. */
  scopeOf(userId: string): PrivilegeSet {
    const cached = this.#scopes.get(userId)
    if (cached !== undefined && cached.version === this.#version) return cached.scope
    const scope = new PrivilegeSet(this.effectivePrivileges(userId))
    this.#scopes.set(userId, { version: this.#version, scope })
    return scope
  }

  createRole(actor: Actor, input: Static<typeof CreateRoleBody>): string {
    const id = randomUUID()
    this.#write(actor, 'create role', 'acl-role', id, () => {
      this.#db
        .prepare('INSERT INTO acl_roles (id, name, description, created_at) VALUES (?, ?, ?, ?)')
        .run(id, input.name, input.description ?? null, this.#clock())
    })
    return id
  }

  updateRole(actor: Actor, id: string, patch: Static<typeof UpdateRoleBody>): void {
    this.#regularRole(id, 'update ACL V2 role')
    this.#write(actor, 'update role', 'acl-role', id, () => {
      if (patch.name !== undefined) this.#db.prepare('UPDATE acl_roles SET name = ? WHERE id = ?').run(patch.name, id)
      if (patch.description !== undefined) this.#db.prepare('UPDATE acl_roles SET description = ? WHERE id = ?').run(patch.description, id)
    })
  }

  deleteRole(actor: Actor, id: string): void {
    this.#regularRole(id, 'delete ACL V2 role')
    this.#write(actor, 'delete role', 'acl-role', id, () => {
      this.#db.prepare('DELETE FROM acl_roles WHERE id = ?').run(id)
    })
  }

  /** A new regular role with the source's name, description and privileges (templates included). */
  copyRole(actor: Actor, sourceId: string, input: { name?: string | undefined; description?: string | undefined }): string {
    const source = this.#roles.get(sourceId)
    if (source === undefined) throw noSuchObject(sourceId, 'role')
    const id = randomUUID()
    const insert = this.#db.prepare('INSERT INTO acl_privileges (id, role_id, resource, action, effect, selector) VALUES (?, ?, ?, ?, ?, ?)')
    this.#write(actor, 'copy role', 'acl-role', id, () => {
      const description = input.description ?? source.description ?? null
      this.#db.prepare('INSERT INTO acl_roles (id, name, description, created_at) VALUES (?, ?, ?, ?)').run(id, input.name ?? source.name, description, this.#clock())
      for (const privilegeId of source.privilegeIds) {
        const privilege = this.#privileges.get(privilegeId)
        if (privilege !== undefined) insert.run(randomUUID(), id, privilege.resource, privilege.action, privilege.effect, privilege.selector ?? null)
      }
    })
    return id
  }

  createPrivilege(actor: Actor, input: Static<typeof CreatePrivilegeBody>): string {
    this.#regularRole(input.roleId, 'create ACL V2 privilege')
    checkPrivilege(input.resource, input.action, input.selector)
    const id = randomUUID()
    this.#write(actor, 'create privilege', 'acl-privilege', id, () => {
      this.#db
        .prepare('INSERT INTO acl_privileges (id, role_id, resource, action, effect, selector) VALUES (?, ?, ?, ?, ?, ?)')
        .run(id, input.roleId, input.resource, input.action, input.effect, input.selector ?? null)
    })
    return id
  }

  /** The privilege as it would be after the patch, checked; for escalation checks before the write. */
  patchedPrivilege(id: string, patch: Static<typeof UpdatePrivilegeBody>): PrivilegeRecord {
    const current = this.#existingPrivilege(id)
    this.#regularRole(current.roleId, 'update ACL V2 privilege')
    const { selector, ...rest } = current
    const next = { ...rest, ...(patch.resource === undefined ? {} : { resource: patch.resource }), ...(patch.action === undefined ? {} : { action: patch.action }), ...(patch.effect === undefined ? {} : { effect: patch.effect }) }
    const nextSelector = patch.selector === undefined ? selector : (patch.selector ?? undefined)
    checkPrivilege(next.resource, next.action, nextSelector)
    return nextSelector === undefined ? next : { ...next, selector: nextSelector }
  }

  updatePrivilege(actor: Actor, id: string, patch: Static<typeof UpdatePrivilegeBody>): void {
    const next = this.patchedPrivilege(id, patch)
    this.#write(actor, 'update privilege', 'acl-privilege', id, () => {
      this.#db
        .prepare('UPDATE acl_privileges SET resource = ?, action = ?, effect = ?, selector = ? WHERE id = ?')
        .run(next.resource, next.action, next.effect, next.selector ?? null, id)
    })
  }

  deletePrivilege(actor: Actor, id: string): void {
    this.#regularRole(this.#existingPrivilege(id).roleId, 'delete ACL V2 privilege')
    this.#write(actor, 'delete privilege', 'acl-privilege', id, () => {
      this.#db.prepare('DELETE FROM acl_privileges WHERE id = ?').run(id)
    })
  }

  /** Assigns (or removes) a role to a user or a group: 409 when already so, 404 when not. */
  assign(actor: Actor, roleId: string, holder: { kind: 'user' | 'group'; id: string }, present: boolean): void {
    const role = this.#regularRole(roleId, `attach ACL V2 role to ${holder.kind}`)
    if (holder.kind === 'user' ? this.#directory.user(holder.id) === undefined : this.#directory.group(holder.id) === undefined) {
      throw noSuchObject(holder.id, holder.kind)
    }
    const held = (holder.kind === 'user' ? role.userIds : role.groupIds)?.includes(holder.id) === true
    const link = `${holder.kind}Role`
    if (present && held) throw new KeelError('OBJECT_ALREADY_EXISTS', `${link} already exists`, { roleId, [`${holder.kind}Id`]: holder.id })
    if (!present && !held) {
      throw new KeelError('NO_SUCH_OBJECT', `no such ${link} ${holder.kind}Id:${holder.id} and roleId:${roleId}`, { id: `${holder.id}/${roleId}`, type: link })
    }
    const table = holder.kind === 'user' ? 'acl_user_roles (role_id, user_id)' : 'acl_group_roles (role_id, group_id)'
    const column = holder.kind === 'user' ? 'user_id' : 'group_id'
    this.#write(actor, `${present ? 'attach role to' : 'detach role from'} ${holder.kind}`, 'acl-role', roleId, () => {
      if (present) this.#db.prepare(`INSERT INTO ${table} VALUES (?, ?)`).run(roleId, holder.id)
      else this.#db.prepare(`DELETE FROM acl_${holder.kind}_roles WHERE role_id = ? AND ${column} = ?`).run(roleId, holder.id)
    })
  }

  #existingPrivilege(id: string): PrivilegeRecord {
    const privilege = this.#privileges.get(id)
    if (privilege === undefined) throw noSuchObject(id, 'privilege')
    return privilege
  }

  #regularRole(id: string, operation: string): RoleRecord {
    const role = this.#roles.get(id)
    if (role === undefined) throw noSuchObject(id, 'role')
    if (role.isTemplate === true) throw templateRefusal(operation)
    return role
  }

  /** One change and its audit entry in one transaction; then the index, the version and the events. */
  #write(actor: Actor, operation: string, objectType: string, objectId: string, change: () => void): void {
    const describe = (): unknown => (objectType === 'acl-role' ? this.#roles.get(objectId) : this.#privileges.get(objectId)) ?? null
    const before = describe()
    const insert = this.#db.prepare(
      'INSERT INTO acl_audit (time, actor_id, operation, object_type, object_id, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)',
    )
    let seq = 0
    const previous = { roles: this.#roles, privileges: this.#privileges }
    this.#db.transaction(() => {
      change()
      this.#reload()
      const after = describe()
      seq = Number(
        insert.run(this.#clock(), actor.id, operation, objectType, objectId, before === null ? null : JSON.stringify(before), after === null ? null : JSON.stringify(after))
          .lastInsertRowid,
      )
    })()
    const row = this.#db.prepare('SELECT * FROM acl_audit WHERE seq = ?').get(seq) as AuditRow
    const entry = toAudit(row)
    this.#audit.push(entry)
    this.#version++
    publishDiff(this.#bus, previous.roles, this.#roles)
    publishDiff(this.#bus, previous.privileges, this.#privileges)
    this.#bus.publish({ kind: 'add', object: entry })
  }

  #refresh(): void {
    const previous = { roles: this.#roles, privileges: this.#privileges }
    this.#reload()
    publishDiff(this.#bus, previous.roles, this.#roles)
  }

  #reload(): void {
    const privilegeRows = this.#db.prepare('SELECT * FROM acl_privileges ORDER BY rowid').all() as PrivilegeRow[]
    const privileges = new Map<string, PrivilegeRecord>()
    const privilegesOf = new Map<string, string[]>()
    for (const row of privilegeRows) {
      privileges.set(row.id, keepIfEqual(this.#privileges.get(row.id), toPrivilege(row)))
      push(privilegesOf, row.role_id, row.id)
    }
    const rolesOfUser = new Map<string, string[]>()
    const usersOf = new Map<string, string[]>()
    for (const { role_id, user_id } of this.#db.prepare('SELECT role_id, user_id FROM acl_user_roles ORDER BY rowid').all() as Array<{ role_id: string; user_id: string }>) {
      push(rolesOfUser, user_id, role_id)
      push(usersOf, role_id, user_id)
    }
    const rolesOfGroup = new Map<string, string[]>()
    const groupsOf = new Map<string, string[]>()
    for (const { role_id, group_id } of this.#db.prepare('SELECT role_id, group_id FROM acl_group_roles ORDER BY rowid').all() as Array<{ role_id: string; group_id: string }>) {
      push(rolesOfGroup, group_id, role_id)
      push(groupsOf, role_id, group_id)
    }
    const roles = new Map<string, RoleRecord>()
    for (const row of this.#db.prepare('SELECT id, name, description, template_id FROM acl_roles ORDER BY template_id IS NULL, template_id, rowid').all() as RoleRow[]) {
      const common = {
        id: row.id,
        type: 'acl-role' as const,
        name: row.name,
        ...(row.description === null ? {} : { description: row.description }),
        privilegeIds: privilegesOf.get(row.id) ?? [],
      }
      const next: RoleRecord =
        row.template_id === null
          ? { ...common, userIds: usersOf.get(row.id) ?? [], groupIds: groupsOf.get(row.id) ?? [] }
          : { ...common, isTemplate: true, roleTemplateId: row.template_id }
      roles.set(row.id, keepIfEqual(this.#roles.get(row.id), next))
    }
    this.#roles = roles
    this.#privileges = privileges
    this.#rolesOfUser = rolesOfUser
    this.#rolesOfGroup = rolesOfGroup
  }

  /**
   * Brings the templates in line with the code at every start: missing ones are
   * created (with random ids), changed ones updated, vanished ones removed.
   */
  #reconcileTemplates(): void {
    const existing = new Map(
      (this.#db.prepare('SELECT id, template_id FROM acl_roles WHERE template_id IS NOT NULL').all() as Array<{ id: string; template_id: number }>).map(
        (row) => [row.template_id, row.id],
      ),
    )
    const insertPrivilege = this.#db.prepare("INSERT INTO acl_privileges (id, role_id, resource, action, effect) VALUES (?, ?, ?, ?, 'allow')")
    this.#db.transaction(() => {
      const wanted = new Set(roleTemplates.map((template) => template.roleTemplateId))
      for (const [templateId, id] of existing) {
        if (!wanted.has(templateId)) this.#db.prepare('DELETE FROM acl_roles WHERE id = ?').run(id)
      }
      for (const template of roleTemplates) {
        let id = existing.get(template.roleTemplateId)
        if (id === undefined) {
          id = randomUUID()
          this.#db
            .prepare('INSERT INTO acl_roles (id, name, description, template_id, created_at) VALUES (?, ?, ?, ?, ?)')
            .run(id, template.name, template.description, template.roleTemplateId, this.#clock())
        } else {
          this.#db.prepare('UPDATE acl_roles SET name = ?, description = ? WHERE id = ?').run(template.name, template.description, id)
        }
        const stored = this.#db.prepare('SELECT * FROM acl_privileges WHERE role_id = ? ORDER BY rowid').all(id) as PrivilegeRow[]
        const same =
          stored.length === template.privileges.length &&
          stored.every((row, i) => {
            const wantedPrivilege = template.privileges[i]
            return row.resource === wantedPrivilege?.resource && row.action === wantedPrivilege.action && row.effect === 'allow' && row.selector === null
          })
        if (same) continue
        this.#db.prepare('DELETE FROM acl_privileges WHERE role_id = ?').run(id)
        for (const privilege of template.privileges) insertPrivilege.run(randomUUID(), id, privilege.resource, privilege.action)
      }
    })()
  }
}

/** A privilege names a known resource, an action that resource has, and a selector that parses within the filter limits: else 422. */
export function checkPrivilege(resource: string, action: string, selector: string | undefined): void {
  if (!isGrantableAction(resource, '*')) {
    throw invalidParameters([{ path: 'body.resource', message: `is not a resource of the catalogue: ${resource}` }])
  }
  if (!isGrantableAction(resource, action)) {
    throw invalidParameters([{ path: 'body.action', message: `is not an action of ${resource}: ${action}` }])
  }
  if (selector === undefined) return
  try {
    compileFilter(selector)
  } catch (error) {
    throw invalidParameters([{ path: 'body.selector', message: error instanceof Error ? error.message : 'does not parse' }])
  }
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}

