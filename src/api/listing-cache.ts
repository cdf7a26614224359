import { LRUCache } from 'lru-cache'

interface Entry {
  readonly version: string
  readonly body: Buffer
}

/**
 * Whole listing bodies, per collection and query, valid while the collection
 * has not changed: dashboards and scripts poll the same query over and over,
 * and an unchanged answer then costs one write, like a static file
 * (bench/RESULTS.md). Bodies are kept only up to `maxEntry` bytes so a huge
 * listing still streams without being held whole.
 */
export class ListingCache {
  readonly #lru: LRUCache<string, Entry>
  // Queries asked once (a script's one-off filter, a new `limit`) would only
  // churn the cache: a body is kept from the second time its query is seen.
  readonly #seen = new LRUCache<string, true>({ max: 4096 })
  readonly maxEntry: number

  constructor(maxBytes: number, maxEntry: number) {
    this.maxEntry = maxEntry
    this.#lru = new LRUCache<string, Entry>({ maxSize: maxBytes, sizeCalculation: (entry, key) => entry.body.length + key.length + 64 })
  }

  /** Whether a body built for this query is worth keeping; the first call for a query says no. */
  wanted(key: string): boolean {
    if (this.#seen.has(key)) return true
    this.#seen.set(key, true)
    return false
  }

  get(key: string, version: string): Buffer | undefined {
    const entry = this.#lru.get(key)
    return entry?.version === version ? entry.body : undefined
  }

  set(key: string, version: string, body: Buffer): void {
    if (body.length <= this.maxEntry) this.#lru.set(key, { version, body })
  }
}
