import type { XoRecord } from '../driver/types.js'
import type { EventBus } from './bus.js'

/** Keeps the previous object when nothing changed, so identity means "unchanged" (the JSON cache relies on it). */
export function keepIfEqual<T extends XoRecord>(previous: T | undefined, next: T): T {
  if (previous !== undefined && JSON.stringify(previous) === JSON.stringify(next)) return previous
  return Object.freeze(next)
}

/** Publishes what differs between two indexes of the same records, by identity. */
export function publishDiff<T extends XoRecord>(bus: EventBus, before: ReadonlyMap<string, T>, after: ReadonlyMap<string, T>): void {
  for (const [id, object] of after) {
    const previous = before.get(id)
    if (previous === undefined) bus.publish({ kind: 'add', object })
    else if (previous !== object) bus.publish({ kind: 'update', object, previous })
  }
  for (const [id, object] of before) if (!after.has(id)) bus.publish({ kind: 'remove', object })
}
