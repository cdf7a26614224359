import { Type } from '@sinclair/typebox'
import type { Driver, OperationContext } from '../driver/types.js'
import { visibly } from '../driver/visible.js'
import { sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, ErrorResponses } from '../http/schemas.js'
import { deletableTypes, patchByType, taggableType } from '../model/operations.js'
import { BASE } from './paths.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'
import { requireUpdates } from '../acl/check.js'

const done = { description: 'Done' }

/** An operation run without a task (DELETE, an export's own snapshot): nothing can abort it, and progress has no reader. */
export const immediate = (userId: string): OperationContext => ({ signal: new AbortController().signal, userId, progress: () => {} })

/** PATCH, DELETE and the tag item routes of one source, as far as its type allows them; each answers once the driver's index shows the change. */
export function changeRoutes(source: CollectionSource, driver: Driver): RouteDef[] {
  const routes: RouteDef[] = []
  const path = `${BASE}/${source.name}/:id`
  const { capabilities } = driver
  const patch = capabilities.patch.includes(source.type) ? patchByType[source.type] : undefined
  if (patch !== undefined) {
    routes.push(
      defineRoute({
        method: 'PATCH',
        path,
        operationId: `update-${source.name}`,
        summary: `Change fields of one object of ${source.name}; all or nothing`,
        tags: [source.name],
        access: privilegeOn(source, 'update'),
        params: Type.Object({ id: Type.String() }),
        body: patch,
        bodyRequired: true,
        responses: { 204: done, ...BodyErrorResponses },
        handler: async ({ res, params, body, principal }) => {
          const object = resolveTarget(source, params.id, principal, 'read')
          if (source.resource !== undefined) requireUpdates(principal, source.resource, object, Object.keys(body))
          await visibly(driver, () => driver.update(object, body))
          sendNoContent(res)
        },
      }),
    )
  }
  if (deletableTypes.includes(source.type) && capabilities.destroy.includes(source.type)) {
    routes.push(
      defineRoute({
        method: 'DELETE',
        path,
        operationId: `delete-${source.name}`,
        summary: `Destroy one object of ${source.name}`,
        tags: [source.name],
        access: privilegeOn(source, 'delete'),
        params: Type.Object({ id: Type.String() }),
        responses: { 204: done, ...BodyErrorResponses },
        handler: async ({ res, params, principal }) => {
          const object = resolveTarget(source, params.id, principal, 'delete')
          await visibly(driver, () => driver.destroy(object, immediate(principal.id)))
          sendNoContent(res)
        },
      }),
    )
  }
  if (taggableType(source.type) !== undefined && capabilities.tags.includes(source.type)) {
    for (const method of ['PUT', 'DELETE'] as const) {
      routes.push(
        defineRoute({
          method,
          path: `${path}/tags/:tag`,
          operationId: `${method === 'PUT' ? 'add' : 'remove'}-${source.name}-tag`,
          summary: method === 'PUT' ? 'Add one tag (idempotent; URL-encode it)' : 'Remove one tag (idempotent)',
          tags: [source.name],
          access: privilegeOn(source, 'update:tags'),
          params: Type.Object({ id: Type.String(), tag: Type.String({ minLength: 1, maxLength: 255 }) }),
          responses: { 204: done, ...ErrorResponses },
          handler: async ({ res, params, principal }) => {
            const object = resolveTarget(source, params.id, principal, 'update:tags')
            await visibly(driver, () => driver.setTag(object, params.tag, method === 'PUT'))
            sendNoContent(res)
          },
        }),
      )
    }
  }
  return routes
}
