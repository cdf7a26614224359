import type { XoRecord } from '../driver/types.js'
import { noSuchObject } from '../errors.js'
import type { CollectionSource } from './sources.js'

/**
 * The object a route acts on, looked up in one place for every route family
 * (reads, actions, PATCH, DELETE, tags), so that what may be done to it is
 * decided where it is found.
 */
export function resolveTarget(source: CollectionSource, id: string): XoRecord {
  const object = source.get(id)
  if (object === undefined) throw noSuchObject(id, source.type)
  return object
}
