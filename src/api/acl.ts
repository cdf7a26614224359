import { Type } from '@sinclair/typebox'
import { notEnoughPrivileges, requirePrivilege, requireUpdates, type MissingPrivilege } from '../acl/check.js'
import { actionCovers } from '../acl/evaluate.js'
import type { AccessControl, PrivilegeRecord } from '../acl/store.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import type { Directory } from '../auth/users.js'
import { forbidden, noSuchObject } from '../errors.js'
import type { JsonCache } from '../http/json-cache.js'
import { sendCreated, sendJson, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema } from '../http/schemas.js'
import {
  AclCheckBody,
  AclCheckResult,
  CopyRoleBody,
  CreatePrivilegeBody,
  CreateRoleBody,
  UpdatePrivilegeBody,
  UpdateRoleBody,
} from '../model/acl.js'
import type { ActionBinding } from './actions.js'
import { BASE } from './paths.js'
import { CollectionQuery, listingResponses, sendSubListing } from './read.js'
import type { CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

export interface AclRouteDeps {
  readonly acl: AccessControl
  readonly directory: Directory
  readonly cache: JsonCache
  /** the collections the access-control routes list from */
  readonly sources: {
    readonly roles: CollectionSource
    readonly privileges: CollectionSource
    readonly users: CollectionSource
    readonly groups: CollectionSource
  }
  /** the collection serving each object type, for access reviews of any object */
  readonly sourceOfResource: (resource: string) => CollectionSource | undefined
}

const IdParams = Type.Object({ id: Type.String() })
const done = { description: 'Done' }

/**
 * No escalation: a non-administrator may only grant what they hold. An `allow`
 * privilege is held when one of theirs allows the same resource, an action
 * covering it, and either no selector or the very same selector, and none of
 * their denies covers that action. A `deny` grants nothing.
 */
function ungranted(principal: Principal, privileges: Iterable<Pick<PrivilegeRecord, 'resource' | 'action' | 'effect' | 'selector'>>, held: readonly PrivilegeRecord[]): MissingPrivilege[] {
  if (isAdmin(principal)) return []
  const missing: MissingPrivilege[] = []
  for (const wanted of privileges) {
    if (wanted.effect === 'deny') continue
    const covers = (mine: PrivilegeRecord): boolean => mine.resource === wanted.resource && actionCovers(mine.action, wanted.action)
    const allowed = held.some((mine) => mine.effect === 'allow' && covers(mine) && (mine.selector === undefined || mine.selector === wanted.selector))
    const denied = held.some((mine) => mine.effect === 'deny' && covers(mine))
    if (!allowed || denied) missing.push({ resource: wanted.resource, action: wanted.action })
  }
  return missing
}

function refuseEscalation(principal: Principal, acl: AccessControl, privileges: Iterable<Pick<PrivilegeRecord, 'resource' | 'action' | 'effect' | 'selector'>>): void {
  const missing = ungranted(principal, privileges, acl.effectivePrivileges(principal.id))
  if (missing.length > 0) throw notEnoughPrivileges(missing)
}

/** The copy action of roles: runs as a task like every action; `sync=true` answers 201 `{id}`. */
export function roleActions(acl: AccessControl): ActionBinding[] {
  return [
    {
      spec: {
        name: 'copy',
        privilege: 'create',
        summary: 'Copy a role (the only way to use a template): a new regular role with the same privileges',
        params: CopyRoleBody,
        creates: 'acl-role',
      },
      run: async (object, params, context) => {
        const input = params as { name?: string; description?: string }
        return { id: acl.copyRole({ id: context.userId }, object.id, input), type: 'acl-role' }
      },
    },
  ]
}

export function aclRoutes(deps: AclRouteDeps): RouteDef[] {
  const { acl, cache, sources } = deps
  const rolePath = `${BASE}/acl-roles`
  const privilegePath = `${BASE}/acl-privileges`
  const listing = (summary: string, operationId: string, path: string, source: CollectionSource, access: { resource: string }, records: (id: string, principal: Principal) => Iterable<{ id: string; type: string; readonly [field: string]: unknown }>): RouteDef =>
    defineRoute({
      method: 'GET',
      path,
      operationId,
      summary,
      tags: ['acl'],
      access: { privilege: { resource: access.resource, action: 'read' }, listing: true },
      params: IdParams,
      query: CollectionQuery,
      responses: listingResponses(source.schema),
      handler: async ({ res, params, query, principal }) => {
        await sendSubListing(res, source, records(params.id, principal), query, { cache, principal })
      },
    })
  const assignment = (method: 'PUT' | 'DELETE', kind: 'user' | 'group'): RouteDef =>
    defineRoute({
      method,
      path: `${rolePath}/:id/${kind}s/:holderId`,
      operationId: `${method === 'PUT' ? 'assign' : 'unassign'}-role-${kind}`,
      summary: method === 'PUT' ? `Assign the role to a ${kind}` : `Take the role from a ${kind}`,
      tags: ['acl'],
      access: { privilege: { resource: 'acl-role', action: `update:${kind}s` } },
      params: Type.Object({ id: Type.String(), holderId: Type.String() }),
      responses: { 204: done, ...BodyErrorResponses },
      handler: ({ res, params, principal }) => {
        const role = resolveTarget(sources.roles, params.id, principal, `update:${kind}s`)
        if (method === 'PUT') {
          refuseEscalation(principal, acl, (role['privilegeIds'] as string[]).flatMap((id) => acl.privilege(id) ?? []))
        }
        acl.assign(principal, params.id, { kind, id: params.holderId }, method === 'PUT')
        sendNoContent(res)
      },
    })

  return [
    defineRoute({
      method: 'POST',
      path: rolePath,
      operationId: 'create-acl-role',
      summary: 'Create a role',
      tags: ['acl'],
      access: { privilege: { resource: 'acl-role', action: 'create' } },
      body: CreateRoleBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: ({ res, body, principal }) => {
        requirePrivilege(principal, 'acl-role', 'create', body)
        const id = acl.createRole(principal, body)
        sendCreated(res, id, `${rolePath}/${id}`)
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${rolePath}/:id`,
      operationId: 'update-acl-role',
      summary: 'Rename or describe a role; a null description removes it',
      tags: ['acl'],
      access: { privilege: { resource: 'acl-role', action: 'update' } },
      params: IdParams,
      body: UpdateRoleBody,
      bodyRequired: true,
      responses: { 204: done, ...BodyErrorResponses },
      handler: ({ res, params, body, principal }) => {
        requireUpdates(principal, 'acl-role', resolveTarget(sources.roles, params.id, principal, 'read'), Object.keys(body))
        acl.updateRole(principal, params.id, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${rolePath}/:id`,
      operationId: 'delete-acl-role',
      summary: 'Delete a role, its privileges and its assignments',
      tags: ['acl'],
      access: { privilege: { resource: 'acl-role', action: 'delete' } },
      params: IdParams,
      responses: { 204: done, ...BodyErrorResponses },
      handler: ({ res, params, principal }) => {
        resolveTarget(sources.roles, params.id, principal, 'delete')
        acl.deleteRole(principal, params.id)
        sendNoContent(res)
      },
    }),
    listing("The role's privileges", 'acl-role-privileges', `${rolePath}/:id/privileges`, sources.privileges, { resource: 'acl-privilege' }, (id, principal) => {
      const role = resolveTarget(sources.roles, id, principal, 'read')
      return (role['privilegeIds'] as string[]).flatMap((privilegeId) => acl.privilege(privilegeId) ?? [])
    }),
    listing('Users holding the role', 'acl-role-users', `${rolePath}/:id/users`, sources.users, { resource: 'user' }, (id, principal) => {
      const role = resolveTarget(sources.roles, id, principal, 'read')
      return ((role['userIds'] as string[] | undefined) ?? []).map((userId) => deps.directory.user(userId) ?? { id: userId, type: 'user' })
    }),
    listing('Groups holding the role', 'acl-role-groups', `${rolePath}/:id/groups`, sources.groups, { resource: 'group' }, (id, principal) => {
      const role = resolveTarget(sources.roles, id, principal, 'read')
      return ((role['groupIds'] as string[] | undefined) ?? []).map((groupId) => deps.directory.group(groupId) ?? { id: groupId, type: 'group' })
    }),
    listing("The group's roles", 'group-acl-roles', `${BASE}/groups/:id/acl-roles`, sources.roles, { resource: 'acl-role' }, (id, principal) => {
      resolveTarget(sources.groups, id, principal, 'read')
      return acl.rolesOfGroup(id)
    }),
    assignment('PUT', 'user'),
    assignment('DELETE', 'user'),
    assignment('PUT', 'group'),
    assignment('DELETE', 'group'),
    defineRoute({
      method: 'POST',
      path: privilegePath,
      operationId: 'create-acl-privilege',
      summary: 'Create a privilege inside a role',
      tags: ['acl'],
      access: { privilege: { resource: 'acl-privilege', action: 'create' } },
      body: CreatePrivilegeBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: ({ res, body, principal }) => {
        requirePrivilege(principal, 'acl-privilege', 'create', body)
        refuseEscalation(principal, acl, [body])
        const id = acl.createPrivilege(principal, body)
        sendCreated(res, id, `${privilegePath}/${id}`)
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${privilegePath}/:id`,
      operationId: 'update-acl-privilege',
      summary: 'Change a privilege; a null selector removes it',
      tags: ['acl'],
      access: { privilege: { resource: 'acl-privilege', action: 'update' } },
      params: IdParams,
      body: UpdatePrivilegeBody,
      bodyRequired: true,
      responses: { 204: done, ...BodyErrorResponses },
      handler: ({ res, params, body, principal }) => {
        requireUpdates(principal, 'acl-privilege', resolveTarget(sources.privileges, params.id, principal, 'read'), Object.keys(body))
        refuseEscalation(principal, acl, [acl.patchedPrivilege(params.id, body)])
        acl.updatePrivilege(principal, params.id, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${privilegePath}/:id`,
      operationId: 'delete-acl-privilege',
      summary: 'Delete a privilege',
      tags: ['acl'],
      access: { privilege: { resource: 'acl-privilege', action: 'delete' } },
      params: IdParams,
      responses: { 204: done, ...BodyErrorResponses },
      handler: ({ res, params, principal }) => {
        resolveTarget(sources.privileges, params.id, principal, 'delete')
        acl.deletePrivilege(principal, params.id)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/users/:id/acl-privileges`,
      operationId: 'user-acl-privileges',
      summary: "A user's effective privileges: through their roles and their groups' roles",
      tags: ['acl'],
      access: { self: { param: 'id' }, privilege: { resource: 'acl-privilege', action: 'read' } },
      params: IdParams,
      query: CollectionQuery,
      responses: listingResponses(sources.privileges.schema),
      handler: async ({ res, params, query, principal }) => {
        if (deps.directory.user(params.id) === undefined) throw noSuchObject(params.id, 'user')
        // Your own privileges are yours to see whole; another's, as far as you may read privileges.
        const viewer = params.id === principal.id ? { ...principal, permission: 'admin' as const } : principal
        await sendSubListing(res, sources.privileges, acl.effectivePrivileges(params.id), query, { cache, principal: viewer })
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/acl-check`,
      operationId: 'acl-check',
      summary: 'Access review: would this action on this object be allowed, and by which privileges',
      tags: ['acl'],
      access: { authenticated: true },
      body: AclCheckBody,
      bodyRequired: true,
      responses: { 200: { description: 'The decision', schema: AclCheckResult }, ...BodyErrorResponses },
      handler: ({ res, body, principal }) => {
        if (body.userId !== undefined && body.userId !== principal.id && !isAdmin(principal)) {
          throw forbidden('only administrators may review another user')
        }
        const userId = body.userId ?? principal.id
        const user = deps.directory.user(userId)
        if (user === undefined) throw noSuchObject(userId, 'user')
        let object: unknown
        if (body.objectId !== undefined) {
          const source = deps.sourceOfResource(body.resource)
          object = source?.get(body.objectId)
          if (object === undefined) throw noSuchObject(body.objectId, body.resource)
        }
        if (user.permission === 'admin') {
          sendJson(res, 200, { allowed: true, matched: [], denying: [] })
          return
        }
        const decision = acl.scopeOf(userId).decide(body.resource, body.action, object)
        sendJson(res, 200, { allowed: decision.allowed, matched: [...decision.matched], denying: [...decision.denying] })
      },
    }),
  ]
}

