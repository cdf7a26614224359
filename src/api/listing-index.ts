import type { XoRecord } from '../driver/types.js'
import type { PropertyTerm } from '../filter/index.js'

/** A property with more distinct values than this is not indexed: testing each value would cost about a scan. */
export const MAX_DISTINCT_VALUES = 4096
/** Properties indexed per collection at once; the one indexed first goes when another comes. */
export const MAX_INDEXED_PROPERTIES = 16
/** Sets of positions kept per collection. */
const MAX_KEPT_SELECTIONS = 16
/** Bytes of texts held by position, per collection, beyond what the JSON cache holds (whole records are large). */
export const MAX_TEXT_BYTES = 32 * 1024 * 1024
/** Variants (field sets) whose texts are held by position, per collection; the one held first goes when another comes. */
export const MAX_TEXT_VARIANTS = 8
/** Past this share of changed records (and a few), the index is built anew rather than patched. */
const PATCH_SHARE = 1 / 8
const PATCH_FEW = 64

/** One property of every record, grouped by value. */
interface Column {
  /** one value of each group, the one a term is tested on */
  readonly values: unknown[]
  readonly sizes: number[]
  /** the group of each record, by its position in the listing */
  readonly groupOf: Uint16Array
  readonly primitives: Map<unknown, number>
  readonly arrays: Map<string, number>
}

/** The records a filter can match: their positions in listing order, and what the rest of the filter asks of each. */
export interface Candidates {
  readonly records: readonly XoRecord[]
  readonly positions: Int32Array
  /** whether the record at one of those positions matches the rest of the filter */
  readonly keeps: (position: number) => boolean
  /** the text of the record at a position, in one variant: kept by position, else asked of `textOf` */
  textAt(variant: string, textOf: (record: XoRecord) => Buffer): (position: number) => Buffer
}

/**
 * The records of one large collection, and the values of the properties
 * filters have named, so that a new filter with a top-level
 * `power_state:Running` or `$pool:<id>` tests its term once per distinct
 * value instead of once per record, and the rest of the filter only on the
 * records that term keeps; their texts are kept by position too. A listing
 * of 50,000 VMs spent most of its time reading every record for its filter
 * and looking up each kept record's text in the JSON cache's Map (bench/RESULTS.md).
 *
 * Exact by construction: a group holds records whose values no term can
 * tell apart (the same primitive, or arrays of the same strings), so the
 * term's answer on one value is its answer on the whole group. Anything else
 * (objects, mixed arrays, too many values) leaves the property unindexed and
 * the listing scans.
 *
 * When the collection's version moves, records that changed in place (a
 * rename, a new power state) are patched where they stand; a record added,
 * removed or moved builds the index anew. Patching keeps the arrays: made
 * anew at each of a rename's versions, they lived long enough to reach the
 * old generation, whose collection at this size takes hundreds of ms.
 */
export class ListingIndex {
  #version: string | undefined
  #records: XoRecord[] = []
  readonly #columns = new Map<string, Column | null>()
  /** the positions of the records a term keeps, by property and matching groups: new filters often repeat a term */
  readonly #selections = new Map<string, Int32Array>()
  readonly #texts = new Map<string, Array<Buffer | undefined>>()
  #textBytes = 0
  /** properties the rest of filters read, by position: an array read instead of each record (a cache miss or two) */
  readonly #values = new Map<string, unknown[]>()

  /** Undefined when none of `terms` can be answered from an index: the caller then scans. */
  candidates(version: string, list: () => Iterable<XoRecord>, terms: readonly PropertyTerm[]): Candidates | undefined {
    if (terms.length === 0) return undefined
    if (version !== this.#version) {
      this.#version = version
      if (!this.#patch(list)) this.#rebuild(list())
    }
    let best: { term: PropertyTerm; column: Column; groups: number[]; size: number } | undefined
    for (const term of terms) {
      const column = this.#column(term.name)
      if (column === null) continue
      const groups: number[] = []
      let size = 0
      column.values.forEach((value, group) => {
        if ((column.sizes[group] ?? 0) === 0 || !term.test(value)) return
        groups.push(group)
        size += column.sizes[group] ?? 0
      })
      if (best === undefined || size < best.size) best = { term, column, groups, size }
    }
    if (best === undefined) return undefined
    const records = this.#records
    const texts = this.#texts
    const forgetOldest = (): void => {
      const [oldest] = texts
      if (oldest === undefined) return
      texts.delete(oldest[0])
      for (const text of oldest[1]) this.#textBytes -= text?.length ?? 0
    }
    const hold = (bytes: number): boolean => {
      if (this.#textBytes + bytes > MAX_TEXT_BYTES) return false
      this.#textBytes += bytes
      return true
    }
    const onValues = best.term.restOnValues.map(({ name, test }) => ({ values: this.#valuesOf(name), test }))
    const onRecord = best.term.restOnRecord
    return {
      records,
      positions: this.#selection(best.term.name, best.column, best.groups, best.size),
      keeps: (position) => {
        for (let i = 0; i < onValues.length; i++) {
          const { values, test } = onValues[i]!
          if (!test(values[position])) return false
        }
        return onRecord === undefined || onRecord(records[position]!)
      },
      textAt(variant, textOf) {
        let kept = texts.get(variant)
        if (kept === undefined) {
          if (texts.size >= MAX_TEXT_VARIANTS) forgetOldest()
          texts.set(variant, (kept = new Array<Buffer | undefined>(records.length)))
        }
        const byPosition = kept
        return (position) => {
          const text = byPosition[position]
          if (text !== undefined) return text
          const made = textOf(records[position]!)
          if (hold(made.length)) byPosition[position] = made
          return made
        }
      },
    }
  }

  #rebuild(records: Iterable<XoRecord>): void {
    // New arrays: a listing under way keeps the ones it started with.
    this.#records = Array.from(records)
    this.#columns.clear()
    this.#selections.clear()
    this.#texts.clear()
    this.#textBytes = 0
    this.#values.clear()
  }

  /**
   * Records replaced in place patched where they stand; false when the
   * collection gained, lost or reordered records. Ids are read only where
   * the record is a new object: reading every record's id took a cache miss
   * per record, 2 to 5 ms at 50,000 VMs in the first slice of the listing
   * after each rename, which a write arriving then waited behind (bench/RESULTS.md).
   */
  #patch(list: () => Iterable<XoRecord>): boolean {
    const known = this.#records
    const positions: number[] = []
    const replacements: XoRecord[] = []
    let at = 0
    for (const record of list()) {
      const before = known[at]
      if (before !== record) {
        if (before === undefined || before.id !== record.id) return false
        positions.push(at)
        replacements.push(record)
        if (positions.length > PATCH_FEW + known.length * PATCH_SHARE) return false
      }
      at++
    }
    if (at !== known.length) return false
    // Only now that the whole order is known to be the same are the records replaced.
    for (let i = 0; i < positions.length; i++) {
      const position = positions[i]!
      const record = replacements[i]!
      known[position] = record
      this.#repatch(position, record)
    }
    return true
  }

  #repatch(position: number, record: XoRecord): void {
    for (const [name, column] of this.#columns) {
      if (column === null) continue
      const before = column.groupOf[position]!
      const group = groupOf(column, record[name])
      if (group === before) continue
      if (group === undefined) {
        this.#columns.set(name, null)
      } else {
        column.groupOf[position] = group
        column.sizes[before]!--
        column.sizes[group]!++
      }
      for (const key of this.#selections.keys()) if (key.startsWith(`${name}\0`)) this.#selections.delete(key)
    }
    for (const texts of this.#texts.values()) {
      this.#textBytes -= texts[position]?.length ?? 0
      texts[position] = undefined
    }
    for (const [name, values] of this.#values) values[position] = record[name]
  }

  #valuesOf(name: string): unknown[] {
    const known = this.#values.get(name)
    if (known !== undefined) return known
    // Generous: a listing under way keeps an array let go here, which patches then no longer reach.
    if (this.#values.size >= 2 * MAX_INDEXED_PROPERTIES) {
      const [oldest] = this.#values.keys()
      if (oldest !== undefined) this.#values.delete(oldest)
    }
    const values = this.#records.map((record) => record[name])
    this.#values.set(name, values)
    return values
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
      if (oldest !== undefined) this.#forget(oldest)
    }
    this.#columns.set(name, column)
    return column
  }

  #forget(name: string): void {
    this.#columns.delete(name)
    for (const key of this.#selections.keys()) if (key.startsWith(`${name}\0`)) this.#selections.delete(key)
  }
}

/** The property read as the filter reads it (`record[name]`, inherited names included); null when it cannot be grouped. */
function groupBy(records: readonly XoRecord[], name: string): Column | null {
  const column: Column = { values: [], sizes: [], groupOf: new Uint16Array(records.length), primitives: new Map(), arrays: new Map() }
  for (let i = 0; i < records.length; i++) {
    const group = groupOf(column, records[i]![name])
    if (group === undefined) return null
    column.groupOf[i] = group
    column.sizes[group]!++
  }
  return column
}

/**
 * The group of a value, made if new; undefined when the value cannot be
 * grouped or one group more would be too many. Primitives are grouped by
 * SameValueZero (no term tells 0 from -0), arrays of strings by their JSON
 * text, in a Map of their own.
 */
function groupOf(column: Column, value: unknown): number | undefined {
  let group: number | undefined
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    group = column.primitives.get(value)
    if (group !== undefined) return group
    if (column.values.length >= MAX_DISTINCT_VALUES) return undefined
    column.primitives.set(value, column.values.length)
  } else if (isStringArray(value)) {
    const key = JSON.stringify(value)
    group = column.arrays.get(key)
    if (group !== undefined) return group
    if (column.values.length >= MAX_DISTINCT_VALUES) return undefined
    column.arrays.set(key, column.values.length)
  } else {
    return undefined
  }
  column.values.push(value)
  column.sizes.push(0)
  return column.values.length - 1
}

function isStringArray(value: object): value is readonly string[] {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return false
  for (let i = 0; i < value.length; i++) if (typeof value[i] !== 'string') return false
  return true
}
