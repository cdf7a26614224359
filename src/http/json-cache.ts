import { LRUCache } from 'lru-cache'

/**
 * Each record's JSON bytes, per variant (whole record, href, one field set),
 * produced once and reused until the record changes. Records are immutable
 * snapshots replaced on change, so "changed" is "a different object": texts
 * hang off the record object itself and a new object simply has none yet.
 *
 * Lookups go through a WeakMap keyed by the record: no key string to build
 * and hash per record, which profiling showed costing more than the listing
 * loop itself. The byte bound is an lru-cache over the same
 * records, sized by the texts each holds; evicting a record drops its texts.
 * A hit does not refresh recency: a hot record that ages out is rebuilt once.
 */
export class JsonCache {
  readonly #texts = new WeakMap<object, Map<string, Buffer>>()
  readonly #budget: LRUCache<object, number>

  constructor(maxBytes: number) {
    this.#budget = new LRUCache<object, number>({
      maxSize: maxBytes,
      sizeCalculation: (bytes) => bytes,
      // 'set' also disposes the old size of a record that gained a variant: keep its texts then.
      dispose: (_bytes, record, reason) => {
        if (reason !== 'set') this.#texts.delete(record)
      },
    })
  }

  /**
   * The text as UTF-8 bytes: a listing then costs memory copies, not string
   * encoding per request. `produce` gets the record so callers can pass one
   * function per listing rather than allocate a closure per record.
   */
  bytes<R extends object>(record: R, variant: string, produce: (record: R) => string | Buffer): Buffer {
    let texts = this.#texts.get(record)
    const hit = texts?.get(variant)
    if (hit !== undefined) return hit
    const produced = produce(record)
    const text = typeof produced === 'string' ? Buffer.from(produced) : produced
    const cost = text.length + variant.length + 64
    if (texts === undefined) {
      texts = new Map()
      this.#texts.set(record, texts)
    }
    texts.set(variant, text)
    this.#budget.set(record, (this.#budget.peek(record) ?? 0) + cost)
    return text
  }

  /** bytes held, as counted against the bound */
  get size(): number {
    return this.#budget.calculatedSize
  }
}
