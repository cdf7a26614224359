import type { ServerResponse } from 'node:http'
import { KeelError } from '../errors.js'

/** Seconds a refused client is told to wait: about how long an admitted large listing takes. */
const RETRY_AFTER_SECONDS = 1
/** How long a read waits in line at most before it is refused like one that found the line full. */
const MAX_WAIT_MS = 10_000

/** Gives back an admission; calling it again does nothing. */
export type Release = () => void

interface Waiter {
  readonly res: ServerResponse
  readonly admit: (release: Release) => void
  readonly refuse: () => void
}

/**
 * Admission control for heavy reads: a listing that scans a large collection
 * instead of answering from the listing cache, and a large body answered from
 * it. At most `limit` are served at once; up to `queue` more wait their turn
 * in arrival order, and one more is refused with 503 and Retry-After.
 *
 * Why the line, and why cached bodies count (bench/RESULTS.md, "write
 * fairness"): one core answers everything, and a write waits for the event
 * loop to come round to its socket. Refused reads came straight back (load
 * generators ignore Retry-After), and the loop spent its turns answering 503s
 * and copying every cached multi-MiB body the moment it was asked for; a
 * waiting read costs nothing. The admitted ones take turns: one chunk of one
 * of them per turn of the event loop (`turn`), so a write arriving meanwhile
 * is read and answered behind one chunk, however many are admitted, and the
 * listings lose nothing when the core is theirs. Writes and small reads never
 * wait here.
 */
export class HeavyReads {
  readonly #limit: number
  readonly #queue: number
  readonly #waiting: Waiter[] = []
  readonly #turns: Array<() => void> = []
  #running = 0
  #turning = false

  /** `limit` 0: no limit; `queue`: reads that may wait for a turn (0: refused at once). */
  constructor(limit: number, queue: number) {
    this.#limit = limit
    this.#queue = queue
  }

  get running(): number {
    return this.#running
  }

  get waiting(): number {
    return this.#waiting.length
  }

  /**
   * Admits one heavy read, whose end calls the returned release (at once, or
   * once its turn comes). With every slot taken and the line full, or after
   * waiting too long, sets Retry-After and throws 503.
   */
  admit(res: ServerResponse): Release | Promise<Release> {
    if (this.#limit === 0 || this.#running < this.#limit) return this.#enter()
    if (this.#waiting.length >= this.#queue) throw this.#busy(res)
    return new Promise<Release>((resolve, reject) => {
      const leave = (): void => {
        clearTimeout(timer)
        res.off('close', leave)
        const index = this.#waiting.indexOf(waiter)
        if (index >= 0) this.#waiting.splice(index, 1)
      }
      const waiter: Waiter = {
        res,
        admit: (release) => {
          leave()
          resolve(release)
        },
        refuse: () => {
          leave()
          reject(this.#busy(res))
        },
      }
      // A client gone while waiting gives its place up; its handler then finds the response destroyed.
      const timer = setTimeout(waiter.refuse, MAX_WAIT_MS)
      res.once('close', leave)
      this.#waiting.push(waiter)
    })
  }

  /** Resolves when it is this caller's turn to produce or send one chunk: one caller per turn of the event loop, in order. */
  turn(): Promise<void> {
    return new Promise((resolve) => {
      this.#turns.push(resolve)
      if (this.#turning) return
      this.#turning = true
      setImmediate(this.#next)
    })
  }

  // An immediate set while immediates run waits for the loop's next turn, with its I/O polled first.
  readonly #next = (): void => {
    this.#turns.shift()?.()
    if (this.#turns.length > 0) setImmediate(this.#next)
    else this.#turning = false
  }

  #enter(): Release {
    this.#running++
    let released = false
    return () => {
      if (released) return
      released = true
      this.#running--
      this.#waiting[0]?.admit(this.#enter())
    }
  }

  #busy(res: ServerResponse): KeelError {
    res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS))
    return new KeelError('SERVICE_UNAVAILABLE', 'too many large listings are being served; retry shortly', {
      reason: 'busy',
      limit: this.#limit,
      retryAfter: RETRY_AFTER_SECONDS,
    })
  }
}
