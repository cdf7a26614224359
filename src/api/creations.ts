import { requirePrivilege } from '../acl/check.js'
import type { Driver } from '../driver/types.js'
import { visibly } from '../driver/visible.js'
import { sendJson } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema } from '../http/schemas.js'
import { creationsByType } from '../model/operations.js'
import { checkReferences, type ActionDeps } from './actions.js'
import { immediate } from './changes.js'
import { BASE } from './paths.js'
import { privilegeOn, type CollectionSource } from './sources.js'

/**
 * `POST /<collection>` for the types both the catalogue and the driver can
 * create: 201 `{id}` with Location once the index shows the new object.
 * The caller needs `create` on the collection's resource, the body standing
 * for the object its selectors are held against (as the reference does),
 * and each object the body names is resolved first: 404 for a missing one.
 */
export function creationRoutes(source: CollectionSource, driver: Driver, deps: ActionDeps): RouteDef[] {
  const spec = Object.hasOwn(creationsByType, source.type) ? creationsByType[source.type] : undefined
  const create = driver.create?.bind(driver)
  if (spec === undefined || create === undefined || !(driver.capabilities.create ?? []).includes(source.type)) return []
  return [
    defineRoute({
      method: 'POST',
      path: `${BASE}/${source.name}`,
      operationId: `create-${source.name}`,
      summary: spec.summary,
      tags: [source.name],
      access: privilegeOn(source, 'create'),
      body: spec.params,
      bodyRequired: true,
      responses: { 201: { description: 'Created (Location points at it)', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: async ({ res, body, principal }) => {
        if (source.resource !== undefined) requirePrivilege(principal, source.resource, 'create', body)
        checkReferences(spec, body, principal, deps)
        const created = await visibly(driver, () => create(source.type, body, immediate(principal.id)))
        sendJson(res, 201, { id: created.id }, { Location: `${BASE}/${source.name}/${created.id}` })
      },
    }),
  ]
}
