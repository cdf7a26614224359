/** What the budget needs of a connection: how much it has yet to deliver, and a way to cut it. */
export interface Budgeted {
  /** bytes queued for it and not yet taken by the kernel, as of now */
  undelivered(): number
  /** closes it, for holding too much while the sum was over the bound */
  cut(undelivered: number, total: number): void
}

/**
 * What is left once the bound was passed, as a share of the bound. Each
 * settling measures and sorts every connection: cut to just under the bound,
 * a herd of stalled connections growing together passes it again a few
 * changes later, for as many settlings as there are stalled connections.
 */
const SETTLED_SHARE = 7 / 8

/**
 * One bound on the bytes all stream connections together have yet to
 * deliver, past each connection's own. Connections report their backlog when
 * it moves (a push, a write, a drain); when the sum of the reports passes the
 * bound, every backlog is measured anew and, if the bound is still passed,
 * the largest are cut until the rest fits in 7/8 of it: the slowest readers
 * go, the others keep receiving.
 */
export class StreamBudget {
  readonly #limit: number
  readonly #reported = new Map<Budgeted, number>()
  #total = 0

  constructor(limit: number) {
    this.#limit = limit
  }

  get limit(): number {
    return this.#limit
  }

  /** the sum of the backlogs last reported */
  get total(): number {
    return this.#total
  }

  report(connection: Budgeted, undelivered: number): void {
    this.#total += undelivered - (this.#reported.get(connection) ?? 0)
    this.#reported.set(connection, undelivered)
    if (this.#total > this.#limit) this.#settle()
  }

  forget(connection: Budgeted): void {
    this.#total -= this.#reported.get(connection) ?? 0
    this.#reported.delete(connection)
  }

  #settle(): void {
    // Reports can be stale (a socket drained since): measure before cutting anyone.
    this.#total = 0
    const backlogs: Array<[Budgeted, number]> = []
    for (const connection of this.#reported.keys()) {
      const undelivered = connection.undelivered()
      this.#reported.set(connection, undelivered)
      this.#total += undelivered
      backlogs.push([connection, undelivered])
    }
    if (this.#total <= this.#limit) return
    backlogs.sort((a, b) => b[1] - a[1])
    const settled = this.#limit * SETTLED_SHARE
    for (const [connection, undelivered] of backlogs) {
      if (this.#total <= settled) break
      const total = this.#total
      this.forget(connection)
      connection.cut(undelivered, total)
    }
  }
}
