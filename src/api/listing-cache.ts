import { LRUCache } from 'lru-cache'

interface Entry {
  readonly version: string
  readonly body: Buffer
}

const SIGHTINGS = 4096
/**
 * Every so many asks each count is halved, so that a query asked often long
 * ago does not keep out the ones asked now.
 */
const AGE_EVERY = 8 * SIGHTINGS

interface Sighting {
  /** times the query was asked while remembered */
  asked: number
  /** bytes of its last body sent whole, if one was */
  size: number | undefined
}

/**
 * Whole listing bodies, per collection and query, valid while the collection
 * has not changed: dashboards and scripts poll the same query over and over,
 * and an unchanged answer then costs one write, like a static file
 * (bench/RESULTS.md). Bodies are kept only up to `maxEntry` bytes so a huge
 * listing still streams without being held whole.
 *
 * What gets in is chosen: each body kept is a buffer V8 counts as external
 * memory, freed only by a full collection once pushed out. At 50,000 VMs,
 * a cache that let in every query asked twice turned over its 64 MiB every
 * fourteen listings, a full collection each time: a listing then cost eight
 * times its own CPU (bench/RESULTS.md). So a query asked once (a script's one-off
 * filter, a new `limit`) is not kept, and a body that would push out another
 * is kept only if its query was asked more often than the one pushed out
 * (counts that age, as in TinyLFU).
 */
export class ListingCache {
  readonly #lru: LRUCache<string, Entry>
  readonly #seen = new LRUCache<string, Sighting>({ max: SIGHTINGS })
  #asks = 0
  readonly #maxBytes: number
  readonly maxEntry: number

  constructor(maxBytes: number, maxEntry: number) {
    this.#maxBytes = maxBytes
    this.maxEntry = maxEntry
    this.#lru = new LRUCache<string, Entry>({ maxSize: maxBytes, sizeCalculation: (entry, key) => ListingCache.#cost(key, entry.body.length) })
  }

  static #cost(key: string, size: number): number {
    return size + key.length + 64
  }

  /** The body kept for this query if still current; counts the query as asked once more. */
  get(key: string, version: string): Buffer | undefined {
    if (++this.#asks === AGE_EVERY) this.#age()
    const sighting = this.#seen.get(key)
    if (sighting === undefined) this.#seen.set(key, { asked: 1, size: undefined })
    else sighting.asked++
    return this.current(key, version)
  }

  #age(): void {
    this.#asks = 0
    for (const sighting of this.#seen.values()) sighting.asked = Math.floor(sighting.asked / 2)
  }

  /** The same, asked again within one request (after waiting for a turn): not counted. */
  current(key: string, version: string): Buffer | undefined {
    const entry = this.#lru.get(key)
    return entry?.version === version ? entry.body : undefined
  }

  /**
   * Whether a body built now for this query would be kept, and if so its
   * expected size (its last body's, for one buffer made at once); undefined
   * when not worth keeping.
   */
  keeping(key: string): number | undefined {
    const sighting = this.#seen.peek(key)
    if (sighting === undefined || sighting.asked < 2 || sighting.size === undefined || sighting.size > this.maxEntry) return undefined
    if (this.#lru.calculatedSize + ListingCache.#cost(key, sighting.size) <= this.#maxBytes) return sighting.size
    const pushedOut = this.#lru.rkeys().next().value
    const rival = pushedOut === undefined ? 0 : (this.#seen.peek(pushedOut)?.asked ?? 0)
    return sighting.asked > rival ? sighting.size : undefined
  }

  /** The size of a body sent whole for this query, kept or not: what `keeping` expects the next time. */
  sent(key: string, size: number): void {
    const sighting = this.#seen.peek(key)
    if (sighting !== undefined) sighting.size = size
  }

  set(key: string, version: string, body: Buffer): void {
    if (body.length <= this.maxEntry) this.#lru.set(key, { version, body })
  }
}
