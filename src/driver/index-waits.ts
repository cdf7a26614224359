import { KeelError } from '../errors.js'
import type { WaitForOptions, XoRecord } from './types.js'

/** How long a driver's index may take to show a change before a wait gives up. */
export const DEFAULT_INDEX_WAIT = 60_000

export const indexTimeout = (timeout: number, id?: string): KeelError =>
  new KeelError(
    'INDEX_TIMEOUT',
    id === undefined ? `the driver's index did not catch up within ${timeout} ms` : `the driver's index did not show ${id} as expected within ${timeout} ms`,
    id === undefined ? { timeout } : { id, timeout },
  )

interface Waiter {
  readonly until: (record: XoRecord) => boolean
  readonly resolve: (record: XoRecord) => void
  readonly reject: (error: unknown) => void
  readonly timer: NodeJS.Timeout
}

const anyRecord = (): boolean => true

/**
 * `Driver.waitFor` over an index that tells this helper which ids it has
 * just changed: a driver holds one and calls `changed` after indexing each
 * change, before publishing it.
 */
export class IndexWaits {
  readonly #lookup: (id: string) => XoRecord | undefined
  readonly #defaultTimeout: number
  readonly #waiters = new Map<string, Set<Waiter>>()

  constructor(lookup: (id: string) => XoRecord | undefined, defaultTimeout = DEFAULT_INDEX_WAIT) {
    this.#lookup = lookup
    this.#defaultTimeout = defaultTimeout
  }

  async waitFor(id: string, options: WaitForOptions = {}): Promise<XoRecord> {
    const until = options.until ?? anyRecord
    const current = this.#lookup(id)
    if (current !== undefined && until(current)) return current
    const timeout = options.timeout ?? this.#defaultTimeout
    return new Promise((resolve, reject) => {
      const waiters = this.#waiters.get(id) ?? new Set()
      this.#waiters.set(id, waiters)
      const waiter: Waiter = {
        until,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#drop(id, waiter)
          reject(indexTimeout(timeout, id))
        }, timeout),
      }
      waiters.add(waiter)
    })
  }

  /** The index has just taken a change of `id` (a removal resolves nothing: the wait goes on). */
  changed(id: string): void {
    const waiters = this.#waiters.get(id)
    if (waiters === undefined) return
    const record = this.#lookup(id)
    if (record === undefined) return
    for (const waiter of waiters) {
      let accepted: boolean
      try {
        accepted = waiter.until(record)
      } catch (error) {
        // A failing condition fails its own wait, not the change being indexed.
        this.#drop(id, waiter)
        waiter.reject(error)
        continue
      }
      if (!accepted) continue
      this.#drop(id, waiter)
      waiter.resolve(record)
    }
  }

  /** Rejects every pending wait (the driver closes). */
  close(error: unknown): void {
    for (const [id, waiters] of this.#waiters) {
      for (const waiter of waiters) {
        this.#drop(id, waiter)
        waiter.reject(error)
      }
    }
  }

  #drop(id: string, waiter: Waiter): void {
    clearTimeout(waiter.timer)
    const waiters = this.#waiters.get(id)
    waiters?.delete(waiter)
    if (waiters?.size === 0) this.#waiters.delete(id)
  }
}
