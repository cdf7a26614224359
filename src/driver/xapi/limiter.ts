/** At most `max` calls in flight; the others wait their turn, in order. */
export class Limiter {
  readonly #max: number
  #running = 0
  readonly #queue: Array<() => void> = []

  constructor(max: number) {
    this.#max = max
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#max) await new Promise<void>((resolve) => this.#queue.push(resolve))
    this.#running++
    try {
      return await fn()
    } finally {
      this.#running--
      this.#queue.shift()?.()
    }
  }
}
