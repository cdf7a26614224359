import type { ChangeKind, XoRecord } from '../driver/types.js'
import type { Chunk } from '../http/chunk.js'
import type { Visibility } from '../acl/visibility.js'
import { AudienceIndex } from './audience-index.js'
import type { EventLog, LoggedChange } from './log.js'

/** A change as one collection sees it: records are that collection's views, absent outside it. */
export interface FeedEvent {
  readonly seq: number
  readonly kind: ChangeKind
  readonly before: XoRecord | undefined
  readonly after: XoRecord | undefined
}

/** Bytes to deliver for an event, or undefined when this audience gets nothing for it. */
export type Formatter = (event: FeedEvent) => Chunk | undefined

/** Where a connection receives frames: each connection of an audience is handed the same one. */
export interface Sink {
  push(frame: Chunk): void
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

/**
 * How a connection joins a collection's feed: the shape of what it receives
 * (fields, filter) and, apart, what its user may see, which is asked again
 * whenever access control changes.
 */
export interface Membership {
  /** the frames' shape apart from access control (fields, filter); equal shapes share frames */
  readonly shape: string
  /** what the user may see as their privileges are now; undefined for everything */
  access(): Visibility | undefined
  format(visibility: Visibility | undefined): Formatter
}

interface Audience {
  readonly key: string
  readonly visibility: Visibility | undefined
  readonly format: Formatter
  readonly sinks: Set<Sink>
}

interface Member {
  readonly membership: Membership
  audience: Audience
}

/**
 * The one listener of a collection: turns each logged change into that
 * collection's event once, formats it once per audience (a shape and a
 * visibility, shared by every user with the same privileges) and hands the
 * same bytes to every connection of the audience. Audiences whose
 * privileges cannot concern a change's records are not asked about it.
 */
class CollectionFeed {
  readonly audiences = new Map<string, Audience>()
  readonly members = new Map<Sink, Member>()
  readonly #index = new AudienceIndex<Audience>()
  readonly #viewOf: ViewOf

  constructor(viewOf: ViewOf) {
    this.#viewOf = viewOf
  }

  join(membership: Membership, sink: Sink): void {
    const visibility = membership.access()
    const key = `${membership.shape}\0${visibility?.key ?? '*'}`
    let audience = this.audiences.get(key)
    if (audience === undefined) {
      audience = { key, visibility, format: membership.format(visibility), sinks: new Set() }
      this.audiences.set(key, audience)
      this.#index.add(audience, visibility?.terms)
    }
    audience.sinks.add(sink)
    this.members.set(sink, { membership, audience })
  }

  leave(sink: Sink): void {
    const member = this.members.get(sink)
    if (member === undefined) return
    this.members.delete(sink)
    const { audience } = member
    audience.sinks.delete(sink)
    if (audience.sinks.size > 0) return
    this.audiences.delete(audience.key)
    this.#index.delete(audience, audience.visibility?.terms)
  }

  /** Moves each member whose user's privileges changed to the audience of their new ones. */
  regroup(): void {
    for (const [sink, member] of [...this.members]) {
      if (member.membership.access() === member.audience.visibility) continue
      this.leave(sink)
      this.join(member.membership, sink)
    }
  }

  deliver(entries: readonly LoggedChange[]): void {
    for (const entry of entries) {
      const event = toFeedEvent(entry, this.#viewOf)
      if (event === undefined) continue
      for (const audience of this.#index.candidates([event.before, event.after])) {
        const frame = audience.format(event)
        if (frame === undefined) continue
        for (const sink of audience.sinks) sink.push(frame)
      }
    }
  }
}

/** Live changes per collection, read from the event log by one shared listener each. */
export class Feeds {
  readonly #log: EventLog
  readonly #views: ReadonlyMap<string, ViewOf>
  readonly #feeds = new Map<string, CollectionFeed>()
  readonly #accessVersion: () => number
  #seenAccess: number
  #stopReading: (() => void) | undefined

  /** @param accessVersion moves whenever what any user may see can have changed */
  constructor(log: EventLog, views: ReadonlyMap<string, ViewOf>, accessVersion: () => number) {
    this.#log = log
    this.#views = views
    this.#accessVersion = accessVersion
    this.#seenAccess = accessVersion()
  }

  /** the number of audiences of each collection with a connection */
  audiences(): Map<string, number> {
    return new Map([...this.#feeds].map(([collection, feed]) => [collection, feed.audiences.size]))
  }

  /** the event number live delivery continues after */
  get position(): number {
    return this.#log.announced
  }

  /** Adds a sink to the collection's feed, in its audience; events after `position` reach it. Returns its removal. */
  attach(collection: string, membership: Membership, sink: Sink): () => void {
    const feed = this.#feed(collection)
    feed.join(membership, sink)
    return () => {
      feed.leave(sink)
      if (feed.members.size > 0 || this.#feeds.get(collection) !== feed) return
      this.#feeds.delete(collection)
      if (this.#feeds.size === 0) {
        this.#stopReading?.()
        this.#stopReading = undefined
      }
    }
  }

  /** whether a client may resume from `after`, collection by collection (a number this process gave) */
  resumable(after: number): boolean {
    return this.#log.issued(after)
  }

  /** how far back (ms) a client of each collection can resume */
  windows(): Map<string, number> {
    return this.#log.windows(this.#views.keys())
  }

  /**
   * Pushes the collection's events after `after` up to `position` to the sink,
   * in order; false when the log no longer holds them all.
   */
  replay(collection: string, after: number, membership: Membership, sink: Sink): boolean {
    const entries = this.#log.since(after, collection)
    if (entries === undefined) return false
    const format = membership.format(membership.access())
    const viewOf = this.#viewOf(collection)
    for (const entry of entries) {
      const event = toFeedEvent(entry, viewOf)
      const frame = event === undefined ? undefined : format(event)
      if (frame !== undefined) sink.push(frame)
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
      // Changed privileges apply from the next batch on, which holds the change that made them.
      const access = this.#accessVersion()
      if (access !== this.#seenAccess) {
        this.#seenAccess = access
        for (const each of this.#feeds.values()) each.regroup()
      }
      for (const each of this.#feeds.values()) each.deliver(entries)
    })
    return feed
  }
}
