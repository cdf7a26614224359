import { indexTimeout } from '../index-waits.js'

interface Waiter {
  readonly token: string
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
  timer?: NodeJS.Timeout
}

/**
 * Waits for the event loop to have applied a token: XAPI's tokens compare
 * as strings (event.inject's doc), so a token at or past the one injected
 * means every change committed before the injection is in the index.
 */
export class TokenBarrier {
  #applied = ''
  readonly #waiters = new Set<Waiter>()

  /** the event loop has applied every event up to `token` */
  reached(token: string): void {
    if (token > this.#applied) this.#applied = token
    for (const waiter of this.#waiters) {
      if (waiter.token > this.#applied) continue
      this.#drop(waiter)
      waiter.resolve()
    }
  }

  /** the index was fetched anew from `token` (a full resync): the log may have started over */
  reset(token: string): void {
    this.#applied = ''
    this.reached(token)
  }

  wait(token: string, timeout: number): Promise<void> {
    if (token <= this.#applied) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { token, resolve, reject }
      waiter.timer = setTimeout(() => {
        this.#drop(waiter)
        reject(indexTimeout(timeout))
      }, timeout)
      this.#waiters.add(waiter)
    })
  }

  close(error: unknown): void {
    for (const waiter of [...this.#waiters]) {
      this.#drop(waiter)
      waiter.reject(error)
    }
  }

  #drop(waiter: Waiter): void {
    clearTimeout(waiter.timer)
    this.#waiters.delete(waiter)
  }
}
