import { XapiError, type ConnectedPool, type PoolConnectionSettings, type PoolConnector } from '../../src/driver/xapi/types.js'
import type { Scheduler } from '../../src/servers/reconnect.js'

/** One pool the fake connector can reach, by the host its entries name. */
export interface FakePool {
  readonly poolId: string
  readonly poolNameLabel: string
  readonly master: string
  readonly username: string
  password: string
  /** what its certificate hashes to; undefined: plain HTTP */
  fingerprint: string | undefined
}

interface Link {
  readonly pool: FakePool
  readonly lose: (reason: Error) => void
}

const networkError = (host: string): Error => Object.assign(new Error(`connect ECONNREFUSED ${host}`), { code: 'ECONNREFUSED' })

/**
 * A PoolConnector over pools that exist only here: it logs in (or refuses bad
 * credentials as XAPI does), fails with a network error as often as told,
 * holds an attempt until released, refuses a pool already connected, and
 * loses a connection on demand. Every attempt's settings are kept.
 */
export class FakePools implements PoolConnector {
  readonly #pools = new Map<string, FakePool>()
  readonly #failures = new Map<string, number>()
  readonly #held = new Map<string, Array<() => void>>()
  readonly #holding = new Set<string>()
  readonly #links = new Map<string, Link>()
  readonly attempts: PoolConnectionSettings[] = []
  readonly logouts: string[] = []
  readonly #attemptWaiters = new Set<() => void>()

  add(host: string, pool: Omit<FakePool, 'password' | 'fingerprint'> & { password: string; fingerprint?: string }): FakePool {
    const made: FakePool = { ...pool, fingerprint: pool.fingerprint }
    this.#pools.set(host, made)
    return made
  }

  /** The next `count` attempts on `host` fail as an unreachable host does. */
  failNetwork(host: string, count: number): void {
    this.#failures.set(host, count)
  }

  /** Attempts on `host` wait until `release` (or their abort). */
  hold(host: string): void {
    this.#holding.add(host)
  }

  release(host: string): void {
    this.#holding.delete(host)
    for (const resume of this.#held.get(host) ?? []) resume()
    this.#held.delete(host)
  }

  /** Ends the connection to the pool behind `host` as a dead master does. */
  lose(host: string, reason = new Error('socket hang up')): void {
    const pool = this.#pools.get(host)
    const link = pool === undefined ? undefined : this.#links.get(pool.poolId)
    if (link === undefined) throw new Error(`${host} is not connected`)
    this.#links.delete(link.pool.poolId)
    link.lose(reason)
  }

  connected(poolId: string): boolean {
    return this.#links.has(poolId)
  }

  /** Resolves once `count` attempts have been made in all. */
  attemptsMade(count: number): Promise<PoolConnectionSettings[]> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.attempts.length < count) return
        this.#attemptWaiters.delete(check)
        resolve(this.attempts)
      }
      this.#attemptWaiters.add(check)
      check()
    })
  }

  async connect(settings: PoolConnectionSettings, signal: AbortSignal): Promise<ConnectedPool> {
    this.attempts.push(settings)
    for (const waiter of [...this.#attemptWaiters]) waiter()
    const host = settings.host
    if (this.#holding.has(host)) {
      await new Promise<void>((resolve, reject) => {
        this.#held.set(host, [...(this.#held.get(host) ?? []), resolve])
        signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')), { once: true })
      })
    }
    const failures = this.#failures.get(host) ?? 0
    if (failures > 0) {
      this.#failures.set(host, failures - 1)
      throw networkError(host)
    }
    const pool = this.#pools.get(host)
    if (pool === undefined) throw networkError(host)
    if (settings.username !== pool.username || settings.password !== pool.password) {
      throw new XapiError('SESSION_AUTHENTICATION_FAILED', [settings.username, 'Authentication failure'])
    }
    if (this.#links.has(pool.poolId)) throw new XapiError('POOL_ALREADY_CONNECTED', [pool.poolId])
    let lose: (reason: Error) => void = () => {}
    const lost = new Promise<Error>((resolve) => {
      lose = resolve
    })
    this.#links.set(pool.poolId, { pool, lose })
    return {
      poolId: pool.poolId,
      poolNameLabel: pool.poolNameLabel,
      master: pool.master,
      fingerprint: pool.fingerprint,
      lost,
      disconnect: async () => {
        this.logouts.push(host)
        if (this.#links.get(pool.poolId)?.pool === pool) this.#links.delete(pool.poolId)
      },
    }
  }
}

/** A scheduler stepped by hand: retries run when the test says, and their delays are kept. */
export class ManualScheduler implements Scheduler {
  readonly delays: number[] = []
  readonly #pending = new Map<number, () => void>()
  #next = 0
  readonly #waiters = new Set<() => void>()

  schedule(delay: number, run: () => void): () => void {
    const key = this.#next++
    this.delays.push(delay)
    this.#pending.set(key, run)
    for (const waiter of [...this.#waiters]) waiter()
    return () => this.#pending.delete(key)
  }

  get pending(): number {
    return this.#pending.size
  }

  /** Resolves once a retry is pending. */
  scheduled(): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.#pending.size === 0) return
        this.#waiters.delete(check)
        resolve()
      }
      this.#waiters.add(check)
      check()
    })
  }

  /** Runs the pending retries now, as if their delays had passed. */
  runAll(): void {
    const due = [...this.#pending.values()]
    this.#pending.clear()
    for (const run of due) run()
  }
}
