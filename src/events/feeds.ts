import type { ChangeKind, XoRecord } from '../driver/types.js'
import type { EventLog, LoggedChange } from './log.js'

/** A change as one collection sees it: records are that collection's views, absent outside it. */
export interface FeedEvent {
  readonly seq: number
  readonly kind: ChangeKind
  readonly before: XoRecord | undefined
  readonly after: XoRecord | undefined
}

/** Bytes to deliver for an event, or undefined when this audience gets nothing for it. */
export type Formatter = (event: FeedEvent) => Buffer | undefined

/**
 * Where a connection receives frames. The event comes along so that a
 * connection can judge per object what its user may see.
 */
export interface Sink {
  push(frame: Buffer, event: FeedEvent): void
}

/** The record as a collection serves it, or undefined when it is not part of that collection. */
export type ViewOf = (record: XoRecord) => XoRecord | undefined

export function toFeedEvent(logged: LoggedChange, viewOf: ViewOf): FeedEvent | undefined {
  const { kind, object, previous } = logged.change
  // An update without its previous record cannot tell entering from changing: it stays an update.
  const unknownPrevious = kind === 'update' && previous === undefined
  const last = kind === 'remove' ? object : previous
  const before = last === undefined ? undefined : viewOf(last)
  const after = kind === 'remove' ? undefined : viewOf(object)
  if (before === undefined && after === undefined) return undefined
  const seen: ChangeKind = after === undefined ? 'remove' : before === undefined && !unknownPrevious ? 'add' : 'update'
  return { seq: logged.seq, kind: seen, before, after }
}

interface Audience {
  readonly format: Formatter
  readonly sinks: Set<Sink>
}

/**
 * The one listener of a collection: turns each logged change into that
 * collection's event once, formats it once per audience (a field set, a
 * filter) and hands the same bytes to every connection of the audience.
 */
class CollectionFeed {
  readonly audiences = new Map<string, Audience>()
  readonly #viewOf: ViewOf

  constructor(viewOf: ViewOf) {
    this.#viewOf = viewOf
  }

  deliver(entries: readonly LoggedChange[]): void {
    for (const entry of entries) {
      const event = toFeedEvent(entry, this.#viewOf)
      if (event === undefined) continue
      for (const audience of this.audiences.values()) {
        const frame = audience.format(event)
        if (frame === undefined) continue
        for (const sink of audience.sinks) sink.push(frame, event)
      }
    }
  }
}

/** Live changes per collection, read from the event log by one shared listener each. */
export class Feeds {
  readonly #log: EventLog
  readonly #views: ReadonlyMap<string, ViewOf>
  readonly #feeds = new Map<string, CollectionFeed>()
  #stopReading: (() => void) | undefined

  constructor(log: EventLog, views: ReadonlyMap<string, ViewOf>) {
    this.#log = log
    this.#views = views
  }

  /** the event number live delivery continues after */
  get position(): number {
    return this.#log.announced
  }

  /**
   * Adds a sink to a collection's audience `key`, formatting with `makeFormat()`
   * when that audience is new. Events after `position` reach it; returns its removal.
   */
  attach(collection: string, key: string, makeFormat: () => Formatter, sink: Sink): () => void {
    const feed = this.#feed(collection)
    let audience = feed.audiences.get(key)
    if (audience === undefined) {
      audience = { format: makeFormat(), sinks: new Set() }
      feed.audiences.set(key, audience)
    }
    audience.sinks.add(sink)
    const joined = audience
    return () => {
      joined.sinks.delete(sink)
      if (joined.sinks.size > 0 || feed.audiences.get(key) !== joined) return
      feed.audiences.delete(key)
      if (feed.audiences.size === 0) this.#feeds.delete(collection)
      if (this.#feeds.size === 0) {
        this.#stopReading?.()
        this.#stopReading = undefined
      }
    }
  }

  /** whether the log still holds every event after `after` */
  holds(after: number): boolean {
    return this.#log.since(after) !== undefined
  }

  /**
   * Pushes the collection's events after `after` up to `position` to the sink,
   * in order; false when the log no longer holds them all.
   */
  replay(collection: string, after: number, format: Formatter, sink: Sink): boolean {
    const entries = this.#log.since(after)
    if (entries === undefined) return false
    const viewOf = this.#viewOf(collection)
    for (const entry of entries) {
      const event = toFeedEvent(entry, viewOf)
      const frame = event === undefined ? undefined : format(event)
      if (event !== undefined && frame !== undefined) sink.push(frame, event)
    }
    return true
  }

  #viewOf(collection: string): ViewOf {
    const viewOf = this.#views.get(collection)
    if (viewOf === undefined) throw new Error(`no collection ${collection}`)
    return viewOf
  }

  #feed(collection: string): CollectionFeed {
    let feed = this.#feeds.get(collection)
    if (feed === undefined) {
      feed = new CollectionFeed(this.#viewOf(collection))
      this.#feeds.set(collection, feed)
    }
    this.#stopReading ??= this.#log.read((entries) => {
      for (const each of this.#feeds.values()) each.deliver(entries)
    })
    return feed
  }
}
