import type { TObject } from '@sinclair/typebox'
import type { Access } from '../acl/access.js'
import type { XoRecord } from '../driver/types.js'

/**
 * One REST collection: where its records come from and how access control
 * names them. The read routes are generated from this list, so adding a
 * collection is adding a source.
 */
export interface CollectionSource<T extends XoRecord = XoRecord> {
  /** path segment under /rest/v0 */
  readonly name: string
  /** the records' `type`, used in 404 bodies (`no such VM <id>`) */
  readonly type: string
  /** access-control resource (spec 2); without one, only administrators reach the collection */
  readonly resource?: string
  readonly schema: TObject
  /** object types whose changes change this collection (default: `type`) */
  readonly versionTypes?: readonly string[]
  /** users may read their own record (`/users/<own id>`) without the read privilege */
  readonly selfReadable?: true
  /** the record as this collection serves it, when it belongs here (default: its type is `type`) */
  readonly view?: (record: XoRecord) => T | undefined
  list(): Iterable<T>
  get(id: string): T | undefined
  /** how many records list() walks, when it can be large: a listing of a large collection is a heavy read */
  size?(): number
}

/** The access of a route doing `action` on a collection's objects, as its declaration says it. */
export function privilegeOn(source: CollectionSource, action: string): Access {
  return source.resource === undefined ? {} : { privilege: { resource: source.resource, action } }
}
