import { Type, type TObject } from '@sinclair/typebox'
import type { Created, Driver, XoRecord } from '../driver/types.js'
import { visibly } from '../driver/visible.js'
import { noSuchObject } from '../errors.js'
import { sendJson, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema, ErrorResponses } from '../http/schemas.js'
import { actionsByType, type ActionSpec } from '../model/operations.js'
import type { TaskContext, TaskManager } from '../tasks/manager.js'
import { BASE } from './paths.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'
import { allows, notEnoughPrivileges, requirePrivilege, type MissingPrivilege } from '../acl/check.js'
import type { Principal } from '../auth/principal.js'

/** An action as routes see it: its spec and what carries it out. */
export interface ActionBinding {
  readonly spec: ActionSpec
  run(object: XoRecord, params: Readonly<Record<string, unknown>>, context: TaskContext & { userId: string }): Promise<Created | undefined>
}

export interface ActionDeps {
  readonly tasks: TaskManager
  readonly driver: Driver
  /** REST collection name of each object type, for Location headers */
  readonly collectionOf: (type: string) => string | undefined
  /** access-control resource of each object type, for the objects parameters name */
  readonly resourceOf: (type: string) => string | undefined
}

const SyncQuery = Type.Object({
  sync: Type.Optional(Type.Boolean({ description: 'Wait for the action to finish: 204, or 201 with the created id, or the error' })),
})

const TaskAccepted = Type.Object({ taskId: Type.String() }, { $id: 'TaskAccepted' })

/**
 * The bindings of the actions both the catalogue and the driver have, for one
 * source. An action's task ends once the driver's index shows what it did,
 * so a client that reads the task's answer then the object sees the change.
 */
export function driverActions(source: CollectionSource, driver: Driver): ActionBinding[] {
  const supported = driver.capabilities.actions[source.type] ?? []
  return (actionsByType[source.type] ?? []).filter((spec) => supported.includes(spec.name)).map((spec) => ({
    spec,
    run: (object, params, context) => visibly(driver, () => driver.perform(object, spec.name, params, context)),
  }))
}

/**
 * `POST /<collection>/:id/actions/<action>` and the discovery routes. The
 * target and every object a parameter names are resolved before a task is
 * created, so that missing objects are a synchronous 404, never a failed task.
 */
export function actionRoutes(source: CollectionSource, bindings: readonly ActionBinding[], deps: ActionDeps): RouteDef[] {
  if (bindings.length === 0) return []
  const base = `${BASE}/${source.name}/:id/actions`
  const IdParams = Type.Object({ id: Type.String() })
  const read = privilegeOn(source, 'read')
  const byName = new Map(bindings.map((binding) => [binding.spec.name, binding]))

  const perform = (binding: ActionBinding): RouteDef =>
    defineRoute({
      method: 'POST',
      path: `${base}/${binding.spec.name}`,
      operationId: `${source.name}-${binding.spec.name}`,
      summary: binding.spec.summary,
      tags: [source.name],
      access: privilegeOn(source, binding.spec.privilege),
      params: IdParams,
      query: SyncQuery,
      body: binding.spec.params,
      responses: {
        202: { description: 'Accepted: follow the task at Location', schema: TaskAccepted },
        201: { description: 'sync=true: done, created this object (Location points at it)', schema: CreatedSchema },
        204: { description: 'sync=true: done' },
        ...BodyErrorResponses,
      },
      handler: async ({ res, params, query, body, principal }) => {
        const id = params.id
        const object = resolveTarget(source, id, principal, binding.spec.privilege)
        const args: Readonly<Record<string, unknown>> = body ?? {}
        const also = binding.spec.bodyPrivilege
        if (also !== undefined) requirePrivilege(principal, also.resource, also.action, args)
        checkReferences(binding.spec, args, principal, deps)
        const userId = principal.id
        const { task, done } = deps.tasks.run(
          {
            name: `REST API: ${binding.spec.name} ${source.type}`,
            objectId: id,
            objectType: source.type,
            userId,
            type: 'xo:rest-api:action',
            params: args,
          },
          (context) => binding.run(object, args, { ...context, userId }),
        )
        if (query['sync'] !== true) {
          sendJson(res, 202, { taskId: task.id }, { Location: `${BASE}/tasks/${task.id}` })
          return
        }
        const created = await done
        if (created === undefined) {
          sendNoContent(res)
          return
        }
        const collection = deps.collectionOf(created.type)
        sendJson(res, 201, { id: created.id }, collection === undefined ? undefined : { Location: `${BASE}/${collection}/${created.id}` })
      },
    })

  return [
    ...bindings.map(perform),
    defineRoute({
      method: 'GET',
      path: base,
      operationId: `${source.name}-actions`,
      summary: `Names of the actions on one object of ${source.name}`,
      tags: [source.name],
      access: read,
      params: IdParams,
      responses: { 200: { description: 'Action names', schema: Type.Array(Type.String()) }, ...ErrorResponses },
      handler: ({ res, params, principal }) => {
        resolveTarget(source, params.id, principal, 'read')
        sendJson(res, 200, bindings.map((binding) => binding.spec.name))
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/:action`,
      operationId: `${source.name}-action`,
      summary: 'One action: its name and the JSON schema of its parameters',
      tags: [source.name],
      access: read,
      params: Type.Object({ id: Type.String(), action: Type.String() }),
      responses: {
        200: { description: 'The action', schema: Type.Object({ name: Type.String(), params: Type.Object({}, { additionalProperties: true }) }) },
        ...ErrorResponses,
      },
      handler: ({ res, params, principal }) => {
        resolveTarget(source, params.id, principal, 'read')
        const binding = byName.get(params.action)
        if (binding === undefined) throw noSuchObject(params.action, 'action')
        sendJson(res, 200, { name: binding.spec.name, params: plainSchema(binding.spec.params) })
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/:action`,
      operationId: `${source.name}-unknown-action`,
      summary: 'Unknown actions',
      tags: [source.name],
      access: read,
      hidden: true,
      params: Type.Object({ id: Type.String(), action: Type.String() }),
      responses: ErrorResponses,
      handler: ({ params, principal }) => {
        resolveTarget(source, params.id, principal, 'read')
        throw noSuchObject(params.action, 'action')
      },
    }),
  ]
}

/**
 * Every object a parameter names must exist (404 naming the first missing) and
 * allow the caller the action the spec asks on it (403 naming all that do not).
 */
export function checkReferences(
  spec: Pick<ActionSpec, 'refs' | 'refPrivileges' | 'listedRefs'>,
  args: Readonly<Record<string, unknown>>,
  principal: Principal,
  deps: ActionDeps,
): void {
  const missing: MissingPrivilege[] = []
  const check = (object: XoRecord, resource: string | undefined, action: string): void => {
    if (resource !== undefined && !allows(principal, resource, action, object)) missing.push({ resource, action, objectId: object.id })
  }
  for (const [path, type] of Object.entries(spec.refs ?? {})) {
    const listed = spec.listedRefs?.[path]
    for (const ref of referencedIds(args, path)) {
      const object = deps.driver.getObject(ref)
      if (object?.type !== type) throw noSuchObject(ref, type)
      check(object, deps.resourceOf(type), spec.refPrivileges?.[path] ?? 'read')
      if (listed === undefined) continue
      const ids = object[listed.field]
      for (const id of Array.isArray(ids) ? ids : []) {
        const item = typeof id === 'string' ? deps.driver.getObject(id) : undefined
        if (item?.type === listed.type) check(item, deps.resourceOf(listed.type), listed.action)
      }
    }
  }
  if (missing.length > 0) throw notEnoughPrivileges(missing)
}

/** The ids a reference path (`hostId`, `vdis[].sr`) names in validated parameters. */
export function referencedIds(params: Readonly<Record<string, unknown>>, path: string): string[] {
  let values: unknown[] = [params]
  for (const segment of path.split('.')) {
    const many = segment.endsWith('[]')
    const key = many ? segment.slice(0, -2) : segment
    values = values.flatMap((value) => {
      const next = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined
      return many ? (Array.isArray(next) ? next : []) : [next]
    })
  }
  return values.filter((value): value is string => typeof value === 'string')
}

/** TypeBox adds symbol keys; clients get plain JSON Schema. */
function plainSchema(schema: TObject): unknown {
  return JSON.parse(JSON.stringify(schema)) as unknown
}
