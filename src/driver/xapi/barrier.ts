import { indexTimeout } from '../index-waits.js'

interface Waiter {
  readonly token: string
  readonly resolve: () => void
  readonly timer: NodeJS.Timeout
}

/**
 * Waits for the event loop to have applied a token: XAPI's tokens compare
 * as strings (event.inject's doc), so a token at or past the one injected
 * means every change committed before the injection is in the index.
 */
export class TokenBarrier {
  #applied = ''
  readonly #waiters = new Set<Waiter>()
  readonly #rejects = new Map<Waiter, (error: unknown) => void>()

  /** the event loop has applied every event up to `token` */
  reached(token: string): void {
    if (token > this.#applied) this.#applied = token
    for (const waiter of this.#waiters) if (waiter.token <= this.#applied) this.#settle(waiter).resolve()
  }

  /** the event log restarted (EVENTS_LOST, a resync): tokens count again from the new one */
  reset(token: string): void {
    this.#applied = ''
    this.reached(token)
  }

  wait(token: string, timeout: number): Promise<void> {
    if (token <= this.#applied) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { token, resolve, timer: setTimeout(() => this.#settle(waiter) && reject(indexTimeout(timeout)), timeout) }
      this.#waiters.add(waiter)
      this.#rejects.set(waiter, reject)
    })
  }

  close(error: unknown): void {
    for (const waiter of this.#waiters) this.#rejects.get(waiter)?.(error)
    for (const waiter of [...this.#waiters]) this.#settle(waiter)
  }

  #settle(waiter: Waiter): Waiter {
    clearTimeout(waiter.timer)
    this.#waiters.delete(waiter)
    this.#rejects.delete(waiter)
    return waiter
  }
}
