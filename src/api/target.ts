import { requirePrivilege } from '../acl/check.js'
import type { Principal } from '../auth/principal.js'
import type { XoRecord } from '../driver/types.js'
import { noSuchObject } from '../errors.js'
import type { CollectionSource } from './sources.js'

/**
 * The object a route acts on, looked up in one place for every route family
 * (reads, actions, PATCH, DELETE, tags), and checked there: a missing object
 * is a 404 for everyone, an object the caller may not `action` a 403.
 */
export function resolveTarget<T extends XoRecord>(source: CollectionSource<T>, id: string, principal: Principal, action: string): T {
  const object = source.get(id)
  if (object === undefined) throw noSuchObject(id, source.type)
  const self = source.selfReadable === true && action === 'read' && id === principal.id
  if (source.resource !== undefined && !self) requirePrivilege(principal, source.resource, action, object, id)
  return object
}
