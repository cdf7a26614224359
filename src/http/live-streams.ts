import type { Logger } from 'pino'
import { Deadlines } from './deadlines.js'

/** What a stream was opened with, checked again only when it may have changed. */
export interface StreamCredential {
  readonly userId: string
  /** whether it still authenticates the same user with the same rights; cheap (no password hashing) */
  valid(): boolean
  /** when it stops being valid by itself (a token's expiration), if ever */
  readonly expiresAt: number | undefined
}

/** A response that stays open: a watch or an event stream. */
export interface LiveStream {
  /** what the log names it by */
  readonly label: Readonly<Record<string, string>>
  readonly credential: StreamCredential
  /** ends the response cleanly */
  end(): void
}

/**
 * Every open stream, so that a revoked or expired credential closes its
 * streams and a shutdown ends them all instead of waiting for clients that
 * never hang up. Nothing runs per stream while nothing changes: a change of
 * a user or of their tokens checks that user's streams, and expirations wait
 * in one queue behind one timer.
 */
export class LiveStreams {
  readonly #byUser = new Map<string, Set<LiveStream>>()
  readonly #expiries = new Deadlines<LiveStream>()
  readonly #maxSleep: number
  readonly #clock: () => number
  readonly #log: Logger
  #timer: NodeJS.Timeout | undefined
  /** entries of the expiry queue whose stream has gone */
  #stale = 0

  /** @param maxSleep the longest the expiry timer sleeps, so that a clock that jumps is followed */
  constructor(options: { maxSleep: number; clock: () => number; log: Logger }) {
    this.#maxSleep = options.maxSleep
    this.#clock = options.clock
    this.#log = options.log
  }

  add(stream: LiveStream): () => void {
    const { userId, expiresAt } = stream.credential
    let streams = this.#byUser.get(userId)
    if (streams === undefined) this.#byUser.set(userId, (streams = new Set()))
    streams.add(stream)
    if (expiresAt !== undefined) {
      const earliest = this.#expiries.next
      this.#expiries.add(expiresAt, stream)
      if (earliest === undefined || expiresAt < earliest) this.#schedule()
    }
    return () => this.#remove(stream)
  }

  /** Ends the streams of `userId` (of everyone without one) whose credentials no longer hold. */
  recheck(userId?: string): void {
    const groups = userId === undefined ? [...this.#byUser.values()] : [this.#byUser.get(userId) ?? new Set<LiveStream>()]
    for (const streams of groups) {
      for (const stream of [...streams]) if (this.#has(stream) && !stream.credential.valid()) this.#close(stream, 'closing a stream whose credentials are no longer valid')
    }
  }

  endAll(): void {
    for (const streams of [...this.#byUser.values()]) for (const stream of [...streams]) stream.end()
    this.#byUser.clear()
    this.#expiries.clear()
    clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #close(stream: LiveStream, message: string): void {
    this.#log.info(stream.label, message)
    this.#remove(stream)
    stream.end()
  }

  #remove(stream: LiveStream): void {
    const { userId } = stream.credential
    const streams = this.#byUser.get(userId)
    if (streams === undefined || !streams.delete(stream)) return
    if (streams.size === 0) this.#byUser.delete(userId)
    if (stream.credential.expiresAt === undefined) return
    // Tokens live for days: streams long gone are dropped from the queue rather than kept until then.
    if (++this.#stale > 1024 && this.#stale * 2 > this.#expiries.size) {
      this.#stale = 0
      this.#expiries.clear()
      for (const each of this.#byUser.values()) {
        for (const live of each) if (live.credential.expiresAt !== undefined) this.#expiries.add(live.credential.expiresAt, live)
      }
    }
  }

  #has(stream: LiveStream): boolean {
    return this.#byUser.get(stream.credential.userId)?.has(stream) === true
  }

  #schedule(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    const next = this.#expiries.next
    if (next === undefined) return
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, Math.min(next - this.#clock(), this.#maxSleep)))
    this.#timer.unref()
  }

  #expire(): void {
    this.#timer = undefined
    for (const stream of this.#expiries.takeUntil(this.#clock())) {
      if (this.#has(stream)) this.#close(stream, 'closing a stream whose credentials expired')
      else this.#stale--
    }
    this.#schedule()
  }
}
