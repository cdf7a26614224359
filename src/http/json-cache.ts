import { LRUCache } from 'lru-cache'

interface Entry {
  readonly record: object
  readonly text: string
}

/**
 * Each record's JSON text, per variant (whole record, or one field set),
 * produced once and reused until the record changes. Records are immutable
 * snapshots replaced on change, so "changed" is "a different object": an
 * entry whose record is not the one asked about is simply stale.
 * Measured in bench/RESULTS.md: joining cached texts is several times cheaper
 * than serializing each listing afresh.
 */
export class JsonCache {
  readonly #lru: LRUCache<string, Entry>

  constructor(maxBytes: number) {
    this.#lru = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      // JS strings of JSON are mostly one byte per char in V8 (latin1); the key and entry cost a little more.
      sizeCalculation: (entry, key) => entry.text.length + key.length + 64,
    })
  }

  text(record: { readonly id: string }, variant: string, produce: () => string): string {
    const key = variant + '\0' + record.id
    const entry = this.#lru.get(key)
    if (entry !== undefined && entry.record === record) return entry.text
    const text = produce()
    this.#lru.set(key, { record, text })
    return text
  }

  get size(): number {
    return this.#lru.calculatedSize
  }
}
