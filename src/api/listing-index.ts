import type { XoRecord } from '../driver/types.js'
import type { FilterPredicate, PropertyTerm } from '../filter/index.js'

/** A property with more distinct values than this is not indexed: testing each value would cost about a scan. */
export const MAX_DISTINCT_VALUES = 4096
/** Properties indexed per collection at once; the one indexed first goes when another comes. */
export const MAX_INDEXED_PROPERTIES = 16
/** Sets of positions kept per collection version. */
const MAX_KEPT_SELECTIONS = 16

/** One property of every record, grouped by value. */
interface Column {
  /** one value of each group, the one the term is tested on */
  readonly values: readonly unknown[]
  readonly sizes: readonly number[]
  /** the group of each record, by its position in the listing */
  readonly groupOf: Uint16Array
}

/** The records a filter can match, in listing order, and what the rest of the filter asks of each. */
export interface Candidates {
  readonly records: Iterable<XoRecord>
  readonly rest: FilterPredicate
}

/**
 * The records of one large collection at one version, and the values of the
 * properties filters have named, so that a new filter with a top-level
 * `power_state:Running` or `$pool:<id>` tests its term once per distinct
 * value instead of once per record, and the rest of the filter only on the
 * records that term keeps. A listing of 50,000 VMs read every record for its
 * filter, most of its cost after the cached texts (bench/RESULTS.md).
 *
 * Exact by construction: a group holds records whose values no term can
 * tell apart (the same primitive, or arrays of the same strings), so the
 * term's answer on one value is its answer on the whole group. Anything else
 * (objects, mixed arrays, too many values) leaves the property unindexed and
 * the listing scans. The whole index is dropped when the version moves.
 */
export class ListingIndex {
  #version: string | undefined
  #records: readonly XoRecord[] = []
  readonly #columns = new Map<string, Column | null>()
  /** the positions of the records a term keeps, by property and matching groups: new filters often repeat a term */
  readonly #selections = new Map<string, Int32Array>()

  /** Undefined when none of `terms` can be answered from an index: the caller then scans. */
  candidates(version: string, list: () => Iterable<XoRecord>, terms: readonly PropertyTerm[]): Candidates | undefined {
    if (terms.length === 0) return undefined
    if (version !== this.#version) {
      this.#version = version
      this.#records = Array.from(list())
      this.#columns.clear()
      this.#selections.clear()
    }
    let best: { name: string; column: Column; groups: number[]; rest: FilterPredicate; size: number } | undefined
    for (const term of terms) {
      const column = this.#column(term.name)
      if (column === null) continue
      const groups: number[] = []
      let size = 0
      column.values.forEach((value, group) => {
        if (!term.test(value)) return
        groups.push(group)
        size += column.sizes[group] ?? 0
      })
      if (best === undefined || size < best.size) best = { name: term.name, column, groups, rest: term.rest, size }
    }
    if (best === undefined) return undefined
    return { records: chosen(this.#records, this.#selection(best.name, best.column, best.groups, best.size)), rest: best.rest }
  }

  #selection(name: string, column: Column, groups: readonly number[], size: number): Int32Array {
    const key = `${name}\0${groups.join(',')}`
    const kept = this.#selections.get(key)
    if (kept !== undefined) return kept
    const matched = new Uint8Array(column.values.length)
    for (const group of groups) matched[group] = 1
    const positions = new Int32Array(size)
    const { groupOf } = column
    let at = 0
    for (let i = 0; i < groupOf.length; i++) if (matched[groupOf[i]!] === 1) positions[at++] = i
    if (this.#selections.size >= MAX_KEPT_SELECTIONS) {
      const [oldest] = this.#selections.keys()
      if (oldest !== undefined) this.#selections.delete(oldest)
    }
    this.#selections.set(key, positions)
    return positions
  }

  #column(name: string): Column | null {
    const known = this.#columns.get(name)
    if (known !== undefined) return known
    const column = groupBy(this.#records, name)
    if (this.#columns.size >= MAX_INDEXED_PROPERTIES) {
      const [oldest] = this.#columns.keys()
      if (oldest !== undefined) this.#columns.delete(oldest)
    }
    this.#columns.set(name, column)
    return column
  }
}

function* chosen(records: readonly XoRecord[], positions: Int32Array): Generator<XoRecord, void, undefined> {
  for (let i = 0; i < positions.length; i++) yield records[positions[i]!]!
}

/** The property read as the filter reads it (`record[name]`, inherited names included); null when it cannot be grouped. */
function groupBy(records: readonly XoRecord[], name: string): Column | null {
  // Primitives are grouped by SameValueZero; no term tells 0 from -0. Arrays of strings by their JSON text, in a Map of their own.
  const primitives = new Map<unknown, number>()
  const arrays = new Map<string, number>()
  const values: unknown[] = []
  const sizes: number[] = []
  const groupOf = new Uint16Array(records.length)
  for (let i = 0; i < records.length; i++) {
    const value = records[i]![name]
    let group: number | undefined
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
      group = primitives.get(value)
      if (group === undefined) primitives.set(value, (group = values.length))
    } else if (isStringArray(value)) {
      const key = JSON.stringify(value)
      group = arrays.get(key)
      if (group === undefined) arrays.set(key, (group = values.length))
    } else {
      return null
    }
    if (group === values.length) {
      if (group >= MAX_DISTINCT_VALUES) return null
      values.push(value)
      sizes.push(0)
    }
    groupOf[i] = group
    sizes[group]!++
  }
  return { values, sizes, groupOf }
}

function isStringArray(value: object): value is readonly string[] {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return false
  for (let i = 0; i < value.length; i++) if (typeof value[i] !== 'string') return false
  return true
}
