import { Type } from '@sinclair/typebox'
import type { Directory } from '../auth/users.js'
import { notEnoughPrivileges, requirePrivilege, requireUpdates } from '../acl/check.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import { forbidden } from '../errors.js'
import { sendCreated, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema } from '../http/schemas.js'
import { CreateUserBody, GroupBody, UpdateUserBody } from '../model/directory.js'
import { BASE } from './paths.js'
import type { CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

const IdParams = Type.Object({ id: Type.String() })

/** Only administrators make administrators, whatever privileges on users a role grants. */
function refuseEscalation(principal: Principal, permission: string | undefined): void {
  if (permission === 'admin' && !isAdmin(principal)) {
    throw notEnoughPrivileges([{ resource: 'user', action: 'update:permission' }])
  }
}
const NoContent = { description: 'Done' }

export function userRoutes(directory: Directory, users: CollectionSource): RouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${BASE}/users`,
      operationId: 'create-user',
      summary: 'Create a user',
      tags: ['users'],
      access: { privilege: { resource: 'user', action: 'create' } },
      body: CreateUserBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: async ({ res, body, principal }) => {
        requirePrivilege(principal, 'user', 'create', body)
        refuseEscalation(principal, body.permission)
        const id = await directory.createUser(body)
        sendCreated(res, id, `${BASE}/users/${id}`)
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${BASE}/users/:id`,
      operationId: 'update-user',
      summary: 'Change a user (only the fields given)',
      tags: ['users'],
      access: { privilege: { resource: 'user', action: 'update' } },
      params: IdParams,
      body: UpdateUserBody,
      bodyRequired: true,
      responses: { 204: NoContent, ...BodyErrorResponses },
      handler: async ({ res, params, body, principal }) => {
        const user = resolveTarget(users, params.id, principal, 'read')
        requireUpdates(principal, 'user', user, Object.keys(body))
        refuseEscalation(principal, body.permission)
        await directory.updateUser(params.id, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/users/:id`,
      operationId: 'delete-user',
      summary: 'Delete a user and their tokens',
      tags: ['users'],
      access: { privilege: { resource: 'user', action: 'delete' } },
      params: IdParams,
      responses: { 204: NoContent, ...BodyErrorResponses },
      handler: ({ res, params, principal }) => {
        const id = params.id
        resolveTarget(users, id, principal, 'delete')
        if (id === principal.id) throw forbidden('a user cannot delete itself')
        directory.deleteUser(id)
        sendNoContent(res)
      },
    }),
  ]
}

export function groupRoutes(directory: Directory, groups: CollectionSource): RouteDef[] {
  const MemberParams = Type.Object({ id: Type.String(), userId: Type.String() })
  const membership = (method: 'PUT' | 'DELETE'): RouteDef =>
    defineRoute({
      method,
      path: `${BASE}/groups/:id/users/:userId`,
      operationId: method === 'PUT' ? 'add-group-member' : 'remove-group-member',
      summary: method === 'PUT' ? 'Add a user to a group (idempotent)' : 'Remove a user from a group (idempotent)',
      tags: ['groups'],
      access: { privilege: { resource: 'group', action: 'update:users' } },
      params: MemberParams,
      responses: { 204: NoContent, ...BodyErrorResponses },
      handler: ({ res, params, principal }) => {
        resolveTarget(groups, params.id, principal, 'update:users')
        directory.setMembership(params.id, params.userId, method === 'PUT')
        sendNoContent(res)
      },
    })
  return [
    defineRoute({
      method: 'POST',
      path: `${BASE}/groups`,
      operationId: 'create-group',
      summary: 'Create a group',
      tags: ['groups'],
      access: { privilege: { resource: 'group', action: 'create' } },
      body: GroupBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: ({ res, body, principal }) => {
        requirePrivilege(principal, 'group', 'create', body)
        const id = directory.createGroup(body.name)
        sendCreated(res, id, `${BASE}/groups/${id}`)
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${BASE}/groups/:id`,
      operationId: 'update-group',
      summary: 'Rename a group',
      tags: ['groups'],
      access: { privilege: { resource: 'group', action: 'update:name' } },
      params: IdParams,
      body: GroupBody,
      bodyRequired: true,
      responses: { 204: NoContent, ...BodyErrorResponses },
      handler: ({ res, params, body, principal }) => {
        resolveTarget(groups, params.id, principal, 'update:name')
        directory.renameGroup(params.id, body.name)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/groups/:id`,
      operationId: 'delete-group',
      summary: 'Delete a group',
      tags: ['groups'],
      access: { privilege: { resource: 'group', action: 'delete' } },
      params: IdParams,
      responses: { 204: NoContent, ...BodyErrorResponses },
      handler: ({ res, params, principal }) => {
        resolveTarget(groups, params.id, principal, 'delete')
        directory.deleteGroup(params.id)
        sendNoContent(res)
      },
    }),
    membership('PUT'),
    membership('DELETE'),
  ]
}
