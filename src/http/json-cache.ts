import { LRUCache } from 'lru-cache'
import type { EventBus } from '../events/bus.js'

/** The variants a record has texts in, and their bytes as counted against the bound. */
interface Held {
  readonly variants: readonly string[]
  readonly bytes: number
}

/** One variant's texts, read through `JsonCache.variant`. */
export type CachedText<R extends object> = (record: R) => Buffer

/**
 * Each record's JSON bytes, per variant (whole record, href, one field set),
 * produced once and reused until the record changes. Records are immutable
 * snapshots replaced on change, so "changed" is "a different object": texts
 * are keyed by the record object itself and a new object simply has none yet.
 *
 * Texts are kept per variant, in one Map per variant keyed by the record: a
 * listing finds its variant's Map once, then makes one lookup per record.
 * One Map of variants per record cost ten times more per record at 50,000
 * VMs, each record's own Map being one more object to reach (bench/RESULTS.md).
 * The byte bound is an lru-cache over the records, sized by the texts each
 * holds; evicting a record drops its texts. A hit does not refresh recency:
 * a hot record that ages out is rebuilt once.
 *
 * A record replaced or removed is dropped at once (`supersede`): the bound
 * counts texts only, not the record objects the cache holds as keys, so
 * every version of every changed record waited for eviction, the heap
 * growing by about 1.5 MiB a minute through the whole soak (issue 30).
 */
export class JsonCache {
  readonly #texts = new Map<string, Map<object, Buffer>>()
  readonly #budget: LRUCache<object, Held>
  /**
   * Replaced records still asked for (a change delivered after a later one
   * replaced its record, a listing begun before) get texts made, not kept.
   */
  readonly #superseded = new WeakSet<object>()

  constructor(maxBytes: number) {
    this.#budget = new LRUCache<object, Held>({
      maxSize: maxBytes,
      sizeCalculation: (held) => held.bytes,
      // 'set' replaces a record's entry with one that has every variant the old one had: keep its texts then.
      dispose: (held, record, reason) => {
        if (reason !== 'set') this.#forget(record, held)
      },
    })
  }

  /**
   * The text as UTF-8 bytes: a listing then costs memory copies, not string
   * encoding per request. `produce` gets the record so callers can pass one
   * function per listing rather than allocate a closure per record.
   */
  bytes<R extends object>(record: R, variant: string, produce: (record: R) => string | Buffer): Buffer {
    return this.#textOf(record, variant, produce)
  }

  /** The texts of one variant, for the many lookups of a listing. */
  variant<R extends object>(variant: string, produce: (record: R) => string | Buffer): CachedText<R> {
    // Held for the listing: a Map dropped meanwhile (its last record evicted) still answers with valid texts.
    const texts = this.#texts.get(variant) ?? new Map<object, Buffer>()
    return (record) => texts.get(record) ?? this.#textOf(record, variant, produce)
  }

  /** Drops a record's texts for good: it was replaced or removed. */
  supersede(record: object): void {
    this.#superseded.add(record)
    this.#budget.delete(record)
  }

  /** Supersedes each record the bus says was replaced or removed; returns the unsubscription. */
  follow(bus: EventBus): () => void {
    return bus.subscribe(({ kind, object, previous }) => {
      if (previous !== undefined && previous !== object) this.supersede(previous)
      if (kind === 'remove') this.supersede(object)
    })
  }

  #textOf<R extends object>(record: R, variant: string, produce: (record: R) => string | Buffer): Buffer {
    const kept = this.#texts.get(variant)?.get(record)
    if (kept !== undefined) return kept
    const produced = produce(record)
    const text = typeof produced === 'string' ? Buffer.from(produced) : produced
    if (this.#superseded.has(record)) return text
    const held = this.#budget.peek(record)
    const now: Held = {
      variants: held === undefined ? [variant] : [...held.variants, variant],
      bytes: (held?.bytes ?? 0) + text.length + variant.length + 64,
    }
    this.#budget.set(record, now)
    // A record too large for the bound is not kept, nor are its earlier texts.
    if (!this.#budget.has(record)) {
      this.#forget(record, now)
      return text
    }
    let texts = this.#texts.get(variant)
    if (texts === undefined) {
      texts = new Map()
      this.#texts.set(variant, texts)
    }
    texts.set(record, text)
    return text
  }

  #forget(record: object, { variants }: Held): void {
    for (const variant of variants) {
      const texts = this.#texts.get(variant)
      if (texts === undefined) continue
      texts.delete(record)
      if (texts.size === 0) this.#texts.delete(variant)
    }
  }

  /** bytes held, as counted against the bound */
  get size(): number {
    return this.#budget.calculatedSize
  }
}
