import type { IndexTerm } from '../acl/visibility.js'

/** Past this many lookups for one string, its property's audiences are judged rather than looked up. */
const MAX_LOOKUPS = 4096

interface PropertyIndex<A> {
  /** needle lengths in use, with how many needles have each */
  readonly lengths: Map<number, number>
  readonly byNeedle: Map<string, Set<A>>
  /** every audience with a term on this property (with its count of terms there), for a value the lookups cannot cover */
  readonly all: Map<A, number>
}

/**
 * Which audiences a record could concern. An audience with index terms sees
 * only records meeting one of them (its property holds the needle in some
 * string, case-insensitively, as the filter matches), so it is found by
 * looking up each window of the record's strings of a needle's length;
 * an audience without terms concerns every record.
 */
export class AudienceIndex<A> {
  readonly #always = new Set<A>()
  readonly #properties = new Map<string, PropertyIndex<A>>()

  add(audience: A, terms: readonly IndexTerm[] | undefined): void {
    if (terms === undefined) {
      this.#always.add(audience)
      return
    }
    for (const { property, needle } of distinct(terms)) {
      let index = this.#properties.get(property)
      if (index === undefined) this.#properties.set(property, (index = { lengths: new Map(), byNeedle: new Map(), all: new Map() }))
      let holders = index.byNeedle.get(needle)
      if (holders === undefined) {
        index.byNeedle.set(needle, (holders = new Set()))
        index.lengths.set(needle.length, (index.lengths.get(needle.length) ?? 0) + 1)
      }
      holders.add(audience)
      index.all.set(audience, (index.all.get(audience) ?? 0) + 1)
    }
  }

  delete(audience: A, terms: readonly IndexTerm[] | undefined): void {
    if (terms === undefined) {
      this.#always.delete(audience)
      return
    }
    for (const { property, needle } of distinct(terms)) {
      const index = this.#properties.get(property)
      const holders = index?.byNeedle.get(needle)
      if (index === undefined || holders === undefined) continue
      holders.delete(audience)
      const left = (index.all.get(audience) ?? 1) - 1
      if (left === 0) index.all.delete(audience)
      else index.all.set(audience, left)
      if (holders.size > 0) continue
      index.byNeedle.delete(needle)
      const count = (index.lengths.get(needle.length) ?? 1) - 1
      if (count === 0) index.lengths.delete(needle.length)
      else index.lengths.set(needle.length, count)
      if (index.byNeedle.size === 0) this.#properties.delete(property)
    }
  }

  /** The audiences that may see one of `records` (each given before and after a change). */
  candidates(records: ReadonlyArray<object | undefined>): Set<A> {
    const found = new Set(this.#always)
    for (const [property, index] of this.#properties) {
      for (const record of records) {
        if (record !== undefined) this.#lookUp(index, (record as Record<string, unknown>)[property], found)
      }
    }
    return found
  }

  #lookUp(index: PropertyIndex<A>, value: unknown, found: Set<A>): void {
    for (const text of stringsIn(value)) {
      const lower = text.toLowerCase()
      if (lower.length * index.lengths.size > MAX_LOOKUPS) {
        for (const audience of index.all.keys()) found.add(audience)
        return
      }
      for (const length of index.lengths.keys()) {
        for (let start = 0; start + length <= lower.length; start++) {
          const holders = index.byNeedle.get(lower.slice(start, start + length))
          if (holders !== undefined) for (const audience of holders) found.add(audience)
        }
      }
    }
  }
}

/** The strings a filter's string term is tried on: the value itself, or nested in its arrays and plain objects. */
function* stringsIn(value: unknown): Generator<string> {
  if (typeof value === 'string') yield value
  else if (Array.isArray(value)) for (const item of value) yield* stringsIn(item)
  else if (typeof value === 'object' && value !== null) {
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto !== null && proto !== Object.prototype) return
    for (const key in value) if (Object.hasOwn(value, key)) yield* stringsIn((value as Record<string, unknown>)[key])
  }
}

function distinct(terms: readonly IndexTerm[]): IndexTerm[] {
  const seen = new Map<string, IndexTerm>()
  for (const term of terms) seen.set(`${term.property}\0${term.needle}`, term)
  return [...seen.values()]
}
