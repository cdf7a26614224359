import type { XoRecord } from '../driver/types.js'
import { pick, type FieldPath } from '../api/projection.js'
import { httpChunk, type Chunk } from '../http/chunk.js'
import type { FeedEvent, Formatter } from './feeds.js'

export interface WatchShape {
  /** the listing's `fields`: undefined for hrefs, `*` for whole records */
  readonly fields: string | undefined
  readonly paths: readonly FieldPath[] | undefined
  readonly predicate: ((record: XoRecord) => boolean) | undefined
  /** with `since`, each line carries its event number as a third element */
  readonly numbered: boolean
  readonly hrefOf: (id: string) => string
  /** the record's JSON bytes with its `href` added, as listings send it */
  readonly withHref: (record: XoRecord, href: string) => Buffer
}

/**
 * Watch lines, `["update", value]` or `["remove", value]`, where value is what
 * the listing with the same `fields` would hold. Matching the filter is judged
 * on both sides of the change, so an object that stops matching is removed
 * and one that never matched is not mentioned.
 */
export function watchFormat(shape: WatchShape): Formatter {
  const { fields, paths, predicate, numbered, hrefOf } = shape
  const value = (record: XoRecord): Buffer | string => {
    const href = hrefOf(record.id)
    if (fields === undefined) return JSON.stringify(href)
    if (paths === undefined) return shape.withHref(record, JSON.stringify(href))
    const picked = pick(record, paths)
    picked['href'] = href
    return JSON.stringify(picked)
  }
  const removed = (record: XoRecord): string => {
    const href = hrefOf(record.id)
    if (fields === undefined) return JSON.stringify(href)
    const identity = paths === undefined ? { id: record.id } : pick({ id: record.id }, paths)
    return JSON.stringify({ ...identity, href })
  }
  const matches = (record: XoRecord): boolean => predicate === undefined || predicate(record)
  return (event: FeedEvent) => {
    if (event.after !== undefined && matches(event.after)) return watchLine('update', value(event.after), numbered ? event.seq : undefined)
    const last = event.before ?? (event.kind === 'update' ? event.after : undefined)
    // An update with no previous record may have left the filter: saying remove is safe, being silent is not.
    if (last === undefined || (event.before !== undefined && !matches(event.before))) return undefined
    return watchLine('remove', removed(last), numbered ? event.seq : undefined)
  }
}

export function watchLine(event: string, value: Buffer | string, seq?: number): Chunk {
  const tail = seq === undefined ? ']\n' : `,${seq}]\n`
  return typeof value === 'string' ? httpChunk(`["${event}",${value}${tail}`) : httpChunk(`["${event}",`, value, tail)
}
