import type { ObjectChange } from '../driver/types.js'
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
  readonly clock: () => number
  /** bytes an entry is counted for against `maxBytes` */
  readonly sizeOf: (change: ObjectChange) => number
  readonly onReaderError: (error: unknown) => void
}

interface Entry extends LoggedChange {
  size: number
}

/**
 * Every change gets one global sequence number. Numbers start from the boot
 * time in microseconds, so a number handed out by an earlier process is
 * always below this process's first one and reads as "no longer held"
 * rather than as some unrelated event of this process.
 *
 * Appending happens inside commits and is O(1); readers are told afterwards,
 * on the next turn of the event loop, with every change of the turn in one
 * batch, so a slow consumer never runs inside a commit. The log keeps the
 * most recent events, bounded by count, bytes and age, for clients that
 * resume from a number they saw.
 */
export class EventLog {
  /** the number before this process's first event */
  readonly boot: number
  readonly #options: EventLogOptions
  readonly #entries: Entry[] = []
  /** index in #entries of the oldest kept entry; the array is compacted now and then rather than shifted */
  #start = 0
  /** index in #entries of the first entry readers have not been told about */
  #unannounced = 0
  #bytes = 0
  #last: number
  #droppedThrough: number
  readonly #readers = new Set<LogReader>()
  #scheduled: NodeJS.Immediate | undefined
  readonly #unsubscribe: () => void

  constructor(bus: EventBus, options: EventLogOptions) {
    this.#options = options
    this.boot = Date.now() * 1000
    this.#last = this.boot
    this.#droppedThrough = this.boot
    this.#unsubscribe = bus.subscribe((change) => this.#append(change))
  }

  /** the number of the last event readers were told about: live delivery continues after it */
  get announced(): number {
    return this.#unannounced === 0 ? this.#droppedThrough : (this.#entries[this.#unannounced - 1] as Entry).seq
  }

  /** Adds a reader, told of every later batch; returns its removal. */
  read(reader: LogReader): () => void {
    this.#readers.add(reader)
    return () => this.#readers.delete(reader)
  }

  /**
   * The announced events after `after`, oldest first; undefined when the log
   * no longer holds all of them (or never held that number).
   */
  since(after: number): readonly LoggedChange[] | undefined {
    this.#trim()
    if (after < this.#droppedThrough || after > this.#last || !Number.isSafeInteger(after)) return undefined
    let index = this.#unannounced
    while (index > this.#start && (this.#entries[index - 1] as Entry).seq > after) index--
    return this.#entries.slice(index, this.#unannounced)
  }

  close(): void {
    this.#unsubscribe()
    if (this.#scheduled !== undefined) clearImmediate(this.#scheduled)
    this.#readers.clear()
  }

  #append(change: ObjectChange): void {
    this.#entries.push({ seq: ++this.#last, at: this.#options.clock(), change, size: 0 })
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
    for (const reader of this.#readers) {
      try {
        reader(batch)
      } catch (error) {
        this.#options.onReaderError(error)
      }
    }
    this.#trim()
  }

  /** Drops announced entries past any bound; unannounced ones wait for their readers. */
  #trim(): void {
    const { maxEvents, maxBytes, window, clock } = this.#options
    const oldestKept = clock() - window
    while (this.#start < this.#unannounced) {
      const oldest = this.#entries[this.#start] as Entry
      const count = this.#entries.length - this.#start
      if (count <= maxEvents && this.#bytes <= maxBytes && oldest.at >= oldestKept) break
      this.#bytes -= oldest.size
      this.#droppedThrough = oldest.seq
      this.#start++
    }
    if (this.#start > 4096 && this.#start * 2 > this.#entries.length) {
      this.#entries.splice(0, this.#start)
      this.#unannounced -= this.#start
      this.#start = 0
    }
  }
}
