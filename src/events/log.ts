import type { ObjectChange, XoRecord } from '../driver/types.js'
import type { EventBus } from './bus.js'

/** One change as the log numbered it. */
export interface LoggedChange {
  readonly seq: number
  /** clock time of the change, for the resume window */
  readonly at: number
  readonly change: ObjectChange
}

export type LogReader = (entries: readonly LoggedChange[]) => void

export interface EventLogOptions {
  readonly maxEvents: number
  readonly maxBytes: number
  /** how long (ms) an event stays available to resuming clients */
  readonly window: number
  /** how long (ms) an event stays whatever `maxEvents` says (`maxBytes` still bounds memory) */
  readonly minAge: number
  readonly clock: () => number
  /** bytes an entry is counted for against `maxBytes` */
  readonly sizeOf: (change: ObjectChange) => number
  /** the collections a change concerns, each of which resumes on its own */
  readonly collectionsOf: (change: ObjectChange) => readonly string[]
  readonly onReaderError: (error: unknown) => void
}

interface Entry extends LoggedChange {
  size: number
  /** replaced by a later update of the same record, which now stands for both */
  gone: boolean
  /** for an update that replaced earlier ones: the first one's number and the record before it */
  first: { readonly seq: number; readonly previous: XoRecord } | undefined
}

/** The newest event of a collection the log let go of. */
interface Dropped {
  readonly seq: number
  readonly at: number
}

const coalescable = (change: ObjectChange): change is ObjectChange & { previous: XoRecord } =>
  change.kind === 'update' && change.previous !== undefined && change.previous.type === change.object.type

/**
 * Every change gets one global sequence number. Numbers start from the boot
 * time in microseconds, so a number handed out by an earlier process is
 * always below this process's first one and reads as "no longer held"
 * rather than as some unrelated event of this process.
 *
 * Appending happens inside commits and is O(1); readers are told afterwards,
 * on the next turn of the event loop, with every change of the turn in one
 * batch, so a slow consumer never runs inside a commit. The log keeps the
 * most recent events, bounded by count (never below `minAge`), bytes and
 * age, for clients that resume from a number they saw.
 *
 * Once readers were told, a record's successive updates are kept as one: the
 * latest, standing for the earlier ones, so that a record changing all the
 * time (usage figures) holds one entry rather than pushing out the changes of
 * others. A client resuming before the first of them gets the latest state
 * once, against the record as it had it; one resuming in the middle gets the
 * latest state with the previous one unknown. Each collection resumes on its
 * own: a number is held for a collection while none of its events after it
 * was let go of.
 */
export class EventLog {
  /** the number before this process's first event */
  readonly boot: number
  readonly #options: EventLogOptions
  #entries: Entry[] = []
  /** index in #entries of the oldest kept entry; the array is compacted now and then rather than shifted */
  #start = 0
  /** index in #entries of the first entry readers have not been told about */
  #unannounced = 0
  /** entries from #start on that are gone */
  #gone = 0
  #bytes = 0
  #last: number
  #announced: number
  /** the last entry of each record, while it is kept */
  readonly #lastOf = new Map<string, Entry>()
  readonly #dropped = new Map<string, Dropped>()
  readonly #startedAt: number
  readonly #readers = new Set<LogReader>()
  #scheduled: NodeJS.Immediate | undefined
  readonly #unsubscribe: () => void

  constructor(bus: EventBus, options: EventLogOptions) {
    this.#options = options
    this.boot = Date.now() * 1000
    this.#last = this.boot
    this.#announced = this.boot
    this.#startedAt = options.clock()
    this.#unsubscribe = bus.subscribe((change) => this.#append(change))
  }

  /** the number of the last event readers were told about: live delivery continues after it */
  get announced(): number {
    return this.#announced
  }

  /** Adds a reader, told of every later batch; returns its removal. */
  read(reader: LogReader): () => void {
    this.#readers.add(reader)
    return () => this.#readers.delete(reader)
  }

  /** Whether this process gave the number (a client may resume from it, collection by collection). */
  issued(after: number): boolean {
    return Number.isSafeInteger(after) && after >= this.boot && after <= this.#last
  }

  /**
   * The announced events after `after`, oldest first, of every collection or
   * as `collection` needs them; undefined when the log no longer holds all
   * of them (or never held that number).
   */
  since(after: number, collection?: string): readonly LoggedChange[] | undefined {
    this.#trim()
    if (!this.issued(after)) return undefined
    const dropped = collection === undefined ? this.#droppedThrough() : (this.#dropped.get(collection)?.seq ?? this.boot)
    if (after < dropped) return undefined
    let index = this.#unannounced
    while (index > this.#start && (this.#entries[index - 1] as Entry).seq > after) index--
    const found: LoggedChange[] = []
    for (const entry of this.#entries.slice(index, this.#unannounced)) {
      if (entry.gone) continue
      const { first } = entry
      if (first === undefined) found.push(entry)
      else {
        const previous = after < first.seq ? first.previous : undefined
        found.push({ seq: entry.seq, at: entry.at, change: { kind: 'update', object: entry.change.object, ...(previous === undefined ? {} : { previous }) } })
      }
    }
    return found
  }

  /** How far back (ms) a client of each collection can resume now. */
  windows(collections: Iterable<string>): Map<string, number> {
    this.#trim()
    const now = this.#options.clock()
    return new Map([...collections].map((collection) => [collection, now - (this.#dropped.get(collection)?.at ?? this.#startedAt)]))
  }

  close(): void {
    this.#unsubscribe()
    if (this.#scheduled !== undefined) clearImmediate(this.#scheduled)
    this.#readers.clear()
  }

  #droppedThrough(): number {
    let seq = this.boot
    for (const dropped of this.#dropped.values()) seq = Math.max(seq, dropped.seq)
    return seq
  }

  #append(change: ObjectChange): void {
    this.#entries.push({ seq: ++this.#last, at: this.#options.clock(), change, size: 0, gone: false, first: undefined })
    this.#scheduled ??= setImmediate(() => this.#announce())
  }

  #announce(): void {
    this.#scheduled = undefined
    const batch = this.#entries.slice(this.#unannounced)
    for (const entry of batch) {
      entry.size = this.#options.sizeOf(entry.change)
      this.#bytes += entry.size
    }
    this.#unannounced = this.#entries.length
    this.#announced = this.#last
    for (const reader of this.#readers) {
      try {
        reader(batch)
      } catch (error) {
        this.#options.onReaderError(error)
      }
    }
    // Live readers had every update as it was; the log keeps a record's latest for those who resume.
    for (const entry of batch) this.#coalesce(entry)
    this.#trim()
  }

  #coalesce(entry: Entry): void {
    const { change } = entry
    const id = change.object.id
    const earlier = this.#lastOf.get(id)
    this.#lastOf.set(id, entry)
    if (earlier === undefined || !coalescable(change) || !coalescable(earlier.change) || earlier.change.object.type !== change.object.type) return
    earlier.gone = true
    this.#gone++
    this.#bytes -= earlier.size
    entry.first = earlier.first ?? { seq: earlier.seq, previous: earlier.change.previous }
  }

  /** Drops announced entries past any bound; unannounced ones wait for their readers. */
  #trim(): void {
    const { maxEvents, maxBytes, window, minAge, clock, collectionsOf } = this.#options
    const now = clock()
    while (this.#start < this.#unannounced) {
      const oldest = this.#entries[this.#start] as Entry
      if (oldest.gone) {
        this.#gone--
        this.#start++
        continue
      }
      const kept = this.#entries.length - this.#start - this.#gone
      const tooMany = kept > maxEvents && oldest.at <= now - minAge
      if (!tooMany && this.#bytes <= maxBytes && oldest.at >= now - window) break
      this.#bytes -= oldest.size
      for (const collection of collectionsOf(oldest.change)) this.#dropped.set(collection, { seq: oldest.seq, at: oldest.at })
      const id = oldest.change.object.id
      if (this.#lastOf.get(id) === oldest) this.#lastOf.delete(id)
      this.#start++
    }
    if (this.#start > 4096 && this.#start * 2 > this.#entries.length) {
      this.#entries.splice(0, this.#start)
      this.#unannounced -= this.#start
      this.#start = 0
    }
    if (this.#gone > 4096 && this.#gone * 2 > this.#entries.length - this.#start) this.#compact()
  }

  /** Leaves out the entries later updates stand for. */
  #compact(): void {
    const announced = this.#entries.slice(this.#start, this.#unannounced).filter((entry) => !entry.gone)
    this.#entries = announced.concat(this.#entries.slice(this.#unannounced))
    this.#start = 0
    this.#unannounced = announced.length
    this.#gone = 0
  }
}
