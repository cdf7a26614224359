import { Type } from '@sinclair/typebox'
import { requirePrivilege } from '../acl/check.js'
import type { KeelError } from '../errors.js'
import { sendCreated, sendJson, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema, ErrorBodySchema } from '../http/schemas.js'
import type { ServerRegistry } from '../servers/registry.js'
import type { TaskManager } from '../tasks/manager.js'
import { BASE } from './paths.js'
import type { CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

const Host = Type.String({
  minLength: 1,
  maxLength: 1024,
  pattern: '^\\S+$',
  description: 'the pool master: `host`, `host:port` or `https://host[:port]`',
})
const Username = Type.String({ minLength: 1, maxLength: 256 })
const Password = Type.String({ minLength: 1, maxLength: 1024 })
const Label = Type.String({ maxLength: 255 })

export const CreateServerBody = Type.Object(
  {
    host: Host,
    username: Username,
    password: Password,
    label: Type.Optional(Label),
    allowUnauthorized: Type.Optional(Type.Boolean({ description: 'accept any certificate; the one seen first is still pinned' })),
    readOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const UpdateServerBody = Type.Object(
  {
    host: Type.Optional(Host),
    username: Type.Optional(Username),
    password: Type.Optional(Password),
    label: Type.Optional(Type.Union([Label, Type.Null()], { description: 'null: show the pool name instead' })),
    allowUnauthorized: Type.Optional(Type.Boolean()),
    readOnly: Type.Optional(Type.Boolean()),
    fingerprint: Type.Optional(Type.Null({ description: 'null forgets the pinned certificate: the next connection pins the one it sees' })),
  },
  { additionalProperties: false, minProperties: 1 },
)

const IdParams = Type.Object({ id: Type.String() })
const SyncQuery = Type.Object({
  sync: Type.Optional(Type.Boolean({ description: 'Wait for the connection (or the logout): 204, or the error' })),
})
const TaskAccepted = Type.Object({ taskId: Type.String() })

export interface ServerRouteDeps {
  readonly registry: ServerRegistry
  readonly servers: CollectionSource
  readonly tasks: TaskManager
}

/**
 * The writes of `servers` (its reads are the generic collection routes, its
 * tasks the per-object listing of src/api/sub-collections.ts). The
 * spec's `server` resource names no update action: a PATCH replaces what
 * identifies the entry, so it needs both `create` and `delete` on it.
 */
export function serverRoutes({ registry, servers, tasks }: ServerRouteDeps): RouteDef[] {
  const action = (name: 'connect' | 'disconnect'): RouteDef =>
    defineRoute({
      method: 'POST',
      path: `${BASE}/servers/:id/actions/${name}`,
      operationId: `servers-${name}`,
      summary: name === 'connect' ? 'Connect the pool (and enable the entry)' : 'Disconnect the pool (and disable the entry: no more retries)',
      tags: ['servers'],
      access: { privilege: { resource: 'server', action: name } },
      params: IdParams,
      query: SyncQuery,
      responses: {
        202: { description: 'Accepted: follow the task at Location', schema: TaskAccepted },
        204: { description: 'sync=true: done' },
        ...BodyErrorResponses,
        409: { description: `The server is already ${name === 'connect' ? 'connected or connecting' : 'disconnected'}`, schema: ErrorBodySchema },
        502: { description: 'sync=true: the pool could not be reached, or refused the credentials', schema: ErrorBodySchema },
      },
      handler: async ({ res, params, query, principal }) => {
        resolveTarget(servers, params.id, principal, name)
        // The state is checked before a task exists: "already so" is a 409, never a failed task.
        const running: Promise<KeelError | undefined> = name === 'connect' ? registry.connect(params.id) : registry.disconnect(params.id).then(() => undefined)
        const { task, done } = tasks.run(
          { name: `${name} server`, objectId: params.id, objectType: 'server', userId: principal.id, type: 'xo:rest-api:action' },
          async () => {
            const refusal = await running
            if (refusal !== undefined) throw refusal
          },
        )
        if (query.sync !== true) {
          sendJson(res, 202, { taskId: task.id }, { Location: `${BASE}/tasks/${task.id}` })
          return
        }
        await done
        sendNoContent(res)
      },
    })

  return [
    defineRoute({
      method: 'POST',
      path: `${BASE}/servers`,
      operationId: 'create-server',
      summary: 'Add a pool: the entry is recorded at once and connected in the background (watch its `status`)',
      tags: ['servers'],
      access: { privilege: { resource: 'server', action: 'create' } },
      body: CreateServerBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: ({ res, body, principal }) => {
        const { password: _password, ...described } = body
        requirePrivilege(principal, 'server', 'create', described)
        const id = registry.create({
          host: body.host,
          username: body.username,
          password: body.password,
          allowUnauthorized: body.allowUnauthorized ?? false,
          readOnly: body.readOnly ?? false,
          ...(body.label === undefined ? {} : { label: body.label }),
        })
        sendCreated(res, id, `${BASE}/servers/${id}`)
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${BASE}/servers/:id`,
      operationId: 'update-server',
      summary: 'Change an entry (only the fields given); a changed host or credential connects it again',
      tags: ['servers'],
      access: { privilege: { resource: 'server', action: 'create' } },
      params: IdParams,
      body: UpdateServerBody,
      bodyRequired: true,
      responses: { 204: { description: 'Changed' }, ...BodyErrorResponses },
      handler: async ({ res, params, body, principal }) => {
        const server = resolveTarget(servers, params.id, principal, 'delete')
        requirePrivilege(principal, 'server', 'create', server, params.id)
        await registry.update(params.id, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/servers/:id`,
      operationId: 'delete-server',
      summary: "Disconnect the pool and forget the entry (the pool's objects leave Keel)",
      tags: ['servers'],
      access: { privilege: { resource: 'server', action: 'delete' } },
      params: IdParams,
      responses: { 204: { description: 'Deleted' }, ...BodyErrorResponses },
      handler: async ({ res, params, principal }) => {
        resolveTarget(servers, params.id, principal, 'delete')
        await registry.delete(params.id)
        sendNoContent(res)
      },
    }),
    action('connect'),
    action('disconnect'),
  ]
}
