import type { ServerResponse } from 'node:http'
import { KeelError } from '../errors.js'

/** Seconds a refused client is told to wait: about how long an admitted large listing takes. */
const RETRY_AFTER_SECONDS = 1

/**
 * Admission control for heavy reads (a listing that scans a large collection
 * instead of answering from the listing cache): at most `limit` run at once,
 * and one more is refused with 503 and Retry-After instead of queueing. Each
 * admitted one yields the event loop between its chunks, so with few of them
 * running a write or a small read waits behind a few chunks, not behind every
 * listing in arrival order (bench/RESULTS.md, "write fairness").
 */
export class HeavyReads {
  readonly #limit: number
  #running = 0

  /** `limit` 0: no limit. */
  constructor(limit: number) {
    this.#limit = limit
  }

  /** Admits one heavy read, whose end calls the returned release; when full, sets Retry-After and throws 503. */
  admit(res: ServerResponse): () => void {
    if (this.#limit > 0 && this.#running >= this.#limit) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS))
      throw new KeelError('SERVICE_UNAVAILABLE', 'too many large listings are being served; retry shortly', {
        reason: 'busy',
        limit: this.#limit,
        retryAfter: RETRY_AFTER_SECONDS,
      })
    }
    this.#running++
    let released = false
    return () => {
      if (released) return
      released = true
      this.#running--
    }
  }
}
