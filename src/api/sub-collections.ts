import { Type } from '@sinclair/typebox'
import type { Driver, XoRecord } from '../driver/types.js'
import type { JsonCache } from '../http/json-cache.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { messageToAlarm } from '../model/alarm.js'
import { BASE } from './paths.js'
import { CollectionQuery, listingResponses, sendSubListing } from './read.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

/**
 * The reference's per-object listings (`vms/<id>/tasks`, `users/<id>/groups`,
 * ...): one object's related records with the collection parameters. Each is a
 * row of the table below; the caller must be able to read the object, and the
 * listing keeps only the records they may read, as every listing does.
 */
interface SubCollection {
  /** collections whose objects have this listing */
  readonly parents: readonly string[]
  /** the path segment after `<parent>/<id>/` */
  readonly name: string
  /** the collection the listed records belong to (their href, schema and access), by parent */
  readonly items: (parent: string) => string
  /** the parent's related records, as `items` serves them */
  readonly select: (parent: XoRecord, items: CollectionSource, look: Lookups) => Iterable<XoRecord>
}

/** Reads across the index that several rows share. */
export interface Lookups {
  readonly messagesOf: (objectId: string) => Iterable<XoRecord>
  readonly tasks: () => Iterable<XoRecord>
  readonly getObject: (id: string) => XoRecord | undefined
}

/** The lookups over a driver's index and the task list. */
export function lookups(driver: Pick<Driver, 'objectsOfType' | 'getObject'>, tasks: { list(): Iterable<XoRecord> }): Lookups {
  return {
    *messagesOf(objectId) {
      for (const message of driver.objectsOfType('message')) if (message['$object'] === objectId) yield message
    },
    tasks: () => tasks.list(),
    getObject: (id) => driver.getObject(id),
  }
}

const ids = (value: unknown): string[] => (Array.isArray(value) ? value.filter((id): id is string => typeof id === 'string') : [])

function* present(items: CollectionSource, keys: Iterable<string>): Generator<XoRecord> {
  for (const key of keys) {
    const record = items.get(key)
    if (record !== undefined) yield record
  }
}

/** The tasks about an object: it is their object, or their parameters name it (as the reference finds them). */
function* tasksAbout(look: Lookups, id: string): Generator<XoRecord> {
  for (const task of look.tasks()) {
    const properties = task['properties'] as { objectId?: unknown; params?: { id?: unknown } } | undefined
    if (properties?.objectId === id || properties?.params?.id === id) yield task
  }
}

/** A VM's disks: the VDIs its VBDs hold (CD drives included, as XAPI lists them). */
function* disksOf(vm: XoRecord, items: CollectionSource, look: Lookups): Generator<XoRecord> {
  for (const vbdId of ids(vm['$VBDs'])) {
    const vdi = look.getObject(vbdId)?.['VDI']
    const record = typeof vdi === 'string' ? items.get(vdi) : undefined
    if (record !== undefined) yield record
  }
}

const INFRASTRUCTURE = ['hosts', 'networks', 'pifs', 'pools', 'srs', 'vbds', 'vdi-snapshots', 'vdis', 'vifs', 'vm-controllers', 'vm-snapshots', 'vm-templates', 'vms']

export const subCollections: readonly SubCollection[] = [
  // An alarm is the view of its message, so the message's id finds it.
  {
    parents: INFRASTRUCTURE,
    name: 'alarms',
    items: () => 'alarms',
    select: (parent, items, look) => present(items, [...look.messagesOf(parent.id)].map((message) => message.id)),
  },
  {
    parents: INFRASTRUCTURE,
    name: 'messages',
    items: () => 'messages',
    // Alarms have their own listing: the reference leaves them out of the messages.
    select: (parent, _items, look) => [...look.messagesOf(parent.id)].filter((message) => messageToAlarm(message) === undefined),
  },
  { parents: [...INFRASTRUCTURE, 'users', 'groups', 'servers'], name: 'tasks', items: () => 'tasks', select: (parent, _items, look) => tasksAbout(look, parent.id) },
  {
    parents: ['vms', 'vm-snapshots', 'vm-templates', 'vm-controllers'],
    name: 'vdis',
    items: (parent) => (parent === 'vm-snapshots' ? 'vdi-snapshots' : 'vdis'),
    select: disksOf,
  },
  { parents: ['users'], name: 'groups', items: () => 'groups', select: (parent, items) => present(items, ids(parent['groups'])) },
  { parents: ['groups'], name: 'users', items: () => 'users', select: (parent, items) => present(items, ids(parent['users'])) },
]

export interface SubCollectionDeps {
  readonly sourceNamed: (name: string) => CollectionSource | undefined
  readonly look: Lookups
  readonly cache: JsonCache
}

/** GET /rest/v0/<parent>/:id/<name> for each row and parent whose collections exist. */
export function subCollectionRoutes(deps: SubCollectionDeps, table: readonly SubCollection[] = subCollections): RouteDef[] {
  const routes: RouteDef[] = []
  for (const row of table) {
    for (const parentName of row.parents) {
      const parent = deps.sourceNamed(parentName)
      const items = deps.sourceNamed(row.items(parentName))
      if (parent === undefined || items === undefined) continue
      routes.push(
        defineRoute({
          method: 'GET',
          path: `${BASE}/${parentName}/:id/${row.name}`,
          operationId: `list-${parentName}-${row.name}`,
          summary: `The ${items.name} of one object of ${parentName}, with the collection parameters`,
          tags: [parentName, items.name],
          access: { ...privilegeOn(parent, 'read'), ...(parent.selfReadable ? { self: { param: 'id' } } : {}) },
          params: Type.Object({ id: Type.String() }),
          query: Type.Pick(CollectionQuery, ['fields', 'filter', 'limit', 'ndjson']),
          responses: listingResponses(items.schema),
          handler: async ({ res, params, query, principal }) => {
            const object = resolveTarget(parent, params.id, principal, 'read')
            await sendSubListing(res, items, row.select(object, items, deps.look), query, { cache: deps.cache, principal })
          },
        }),
      )
    }
  }
  return routes
}
