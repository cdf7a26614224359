import { LRUCache } from 'lru-cache'
import { Visibilities } from '../acl/visibility.js'
import { isAdmin, type Principal } from '../auth/principal.js'

/**
 * What a group of callers may read of each resource: every caller whose read
 * privileges on those resources are the same (the same allow and deny
 * selectors, as event streams group them) sees the same dashboard.
 */
export interface Audience {
  readonly key: string
  /** undefined: every record of the resource */
  visible(resource: string): ((record: object) => boolean) | undefined
}

const EVERYTHING: Audience = { key: '*', visible: () => undefined }

/** The audience of callers reading `resources` with the privileges of `principal`. */
export function audienceOf(principal: Principal, resources: readonly string[], visibilities: Visibilities): Audience {
  const scope = principal.privileges
  if (isAdmin(principal) || scope === undefined) return EVERYTHING
  const byResource = new Map(resources.map((resource) => [resource, visibilities.of(scope, resource)]))
  return {
    key: [...byResource.values()].map((visibility) => visibility.key).join('\n'),
    // A resource not named in `resources` is one the dashboard does not read: nothing of it shows.
    visible: (resource) => byResource.get(resource)?.visible ?? (() => false),
  }
}

interface Entry<T> {
  readonly stamp: string
  readonly value: Promise<T>
}

/**
 * One computation per audience and stamp, shared by every request that
 * arrives meanwhile (those made while it runs wait for it). The stamp names
 * the state a computation reads (change counters and the second): a request
 * after a change sees a stamp of its own, so a client reads its own writes.
 */
export class SharedDashboards<T> {
  // One entry per audience in use: distinct privilege sets are few, and the bound keeps a churn of them in check.
  readonly #entries = new LRUCache<string, Entry<T>>({ max: 1000 })
  readonly #stamp: () => string
  readonly #compute: (audience: Audience) => Promise<T>

  constructor(stamp: () => string, compute: (audience: Audience) => Promise<T>) {
    this.#stamp = stamp
    this.#compute = compute
  }

  of(audience: Audience): Promise<T> {
    const stamp = this.#stamp()
    const last = this.#entries.get(audience.key)
    if (last !== undefined && last.stamp === stamp) return last.value
    const entry: Entry<T> = { stamp, value: this.#compute(audience) }
    this.#entries.set(audience.key, entry)
    // A failure is the failing requests' answer, not the next ones'.
    entry.value.catch(() => {
      if (this.#entries.get(audience.key) === entry) this.#entries.delete(audience.key)
    })
    return entry.value
  }
}
