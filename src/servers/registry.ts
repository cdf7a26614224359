import type { ConnectedPool, PoolConnectionSettings, PoolConnector } from '../driver/xapi/types.js'
import type { XoRecord } from '../driver/types.js'
import { incorrectState, noSuchObject, type KeelError } from '../errors.js'
import type { EventBus } from '../events/bus.js'
import { keepIfEqual } from '../events/diff.js'
import { certificateChanged, connectionRefusal, describeFailure, isPermanent } from './errors.js'
import { serverRecord, type LiveState, type ServerRecord } from './record.js'
import { backoffDelay, type BackoffPolicy, type Scheduler } from './reconnect.js'
import type { EntryChange, ServerEntry, ServerError, ServerStore } from './store.js'

export interface RegistryOptions {
  readonly store: ServerStore
  readonly connector: PoolConnector
  readonly bus: EventBus
  readonly scheduler: Scheduler
  readonly backoff: BackoffPolicy
  /** 0 to 1, for the jitter of retries */
  readonly random: () => number
  readonly log: {
    info(fields: Record<string, unknown>, message: string): void
    warn(fields: Record<string, unknown>, message: string): void
  }
}

/** What a running entry holds beside its stored fields. */
interface Runtime {
  live: LiveState
  pool: ConnectedPool | undefined
  /** failed attempts since the last connection, for the backoff */
  failures: number
  attempt: AbortController | undefined
  cancelRetry: (() => void) | undefined
  /** bumped by whatever makes a running attempt stale (disconnect, delete, a changed credential) */
  generation: number
}

export type ServerInput = Pick<ServerEntry, 'host' | 'username' | 'allowUnauthorized' | 'readOnly'> & { password: string; label?: string }
export type ServerChange = Partial<Pick<ServerEntry, 'host' | 'username' | 'allowUnauthorized' | 'readOnly'>> & {
  readonly password?: string
  readonly label?: string | null
  readonly fingerprint?: null
}

/** Changing one of these makes a running connection stale: it is made again with the new values. */
const CONNECTION_FIELDS = ['host', 'username', 'password', 'allowUnauthorized', 'readOnly', 'fingerprint'] as const

/**
 * The `servers` entries and their pool connections: one connection per
 * entry, enabled entries connected at start and retried after failures with
 * backoff, except after failures retrying cannot mend (bad credentials, a
 * pool connected through another entry, a changed certificate), which wait
 * until the entry changes or a client connects it again. Every change of an
 * entry's record, its status included, goes on the bus.
 */
export class ServerRegistry {
  readonly #options: RegistryOptions
  readonly #records = new Map<string, ServerRecord>()
  readonly #runtime = new Map<string, Runtime>()
  #closed = false

  constructor(options: RegistryOptions) {
    this.#options = options
    for (const entry of options.store.all()) {
      this.#runtime.set(entry.id, newRuntime())
      this.#records.set(entry.id, Object.freeze(serverRecord(entry, { status: 'disconnected' })))
    }
  }

  /** Connects the enabled entries, in the background; those stopped by a permanent failure wait for a change. */
  start(): void {
    for (const entry of this.#options.store.all()) {
      if (entry.enabled && (entry.error === undefined || !isPermanent(entry.error))) void this.#connect(entry.id)
    }
  }

  list(): Iterable<ServerRecord> {
    return this.#records.values()
  }

  get(id: string): ServerRecord | undefined {
    return this.#records.get(id)
  }

  /** Records the entry and connects it in the background; returns its id at once. */
  create(input: ServerInput): string {
    const entry = this.#options.store.create(input)
    this.#runtime.set(entry.id, newRuntime())
    this.#publish(entry.id)
    void this.#connect(entry.id)
    return entry.id
  }

  /**
   * Changes an entry. Any change clears the last error (it was about the entry
   * as it was); a changed host or credential makes the connection again, and
   * a changed host forgets the pinned certificate (another host has another one).
   */
  async update(id: string, change: ServerChange): Promise<void> {
    const before = this.#entry(id)
    const stored: EntryChange = { ...change, error: null, ...(change.host !== undefined && change.host !== before.host ? { fingerprint: null } : {}) }
    const after = this.#options.store.update(id, stored)
    const runtime = this.#runtimeOf(id)
    if (after.enabled && CONNECTION_FIELDS.some((field) => change[field] !== undefined)) {
      await this.#stop(id)
      this.#publish(id)
      void this.#connect(id)
    } else if (after.enabled && runtime.live.status === 'disconnected' && runtime.cancelRetry === undefined) {
      // An enabled entry stopped by a permanent failure: the change may have mended it.
      void this.#connect(id)
    } else {
      this.#publish(id)
    }
  }

  async delete(id: string): Promise<void> {
    this.#entry(id)
    await this.#stop(id)
    this.#options.store.delete(id)
    this.#runtime.delete(id)
    const record = this.#records.get(id)
    this.#records.delete(id)
    if (record !== undefined) this.#options.bus.publish({ kind: 'remove', object: record })
  }

  /**
   * 409 unless disconnected, thrown before anything starts. Enables the entry
   * and starts connecting it (the status is `connecting` when this returns);
   * the promise settles once connected (undefined) or with the refusal, never rejects.
   */
  connect(id: string): Promise<KeelError | undefined> {
    this.#entry(id)
    const status = this.#runtimeOf(id).live.status
    if (status !== 'disconnected') throw incorrectState({ actual: status, expected: 'disconnected', object: id, property: 'status' })
    this.#options.store.update(id, { enabled: true, error: null })
    return this.#connect(id)
  }

  /** 409 when disconnected and not enabled (nothing to stop), thrown at once. Disables the entry: no more retries. */
  disconnect(id: string): Promise<void> {
    const entry = this.#entry(id)
    const status = this.#runtimeOf(id).live.status
    if (status === 'disconnected' && !entry.enabled) {
      throw incorrectState({ actual: status, expected: ['connected', 'connecting'], object: id, property: 'status' })
    }
    this.#options.store.update(id, { enabled: false })
    const stopped = this.#stop(id)
    // Shown disconnected at once; the logout finishes in the background of the promise.
    this.#publish(id)
    return stopped
  }

  /** Stops every retry and attempt and logs out of every pool. */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#runtime.keys()].map((id) => this.#stop(id)))
  }

  /** One attempt; resolves with the refusal a waiting client gets, or undefined once connected. */
  async #connect(id: string): Promise<KeelError | undefined> {
    const runtime = this.#runtimeOf(id)
    runtime.cancelRetry?.()
    runtime.cancelRetry = undefined
    const generation = ++runtime.generation
    const attempt = new AbortController()
    runtime.attempt = attempt
    const entry = this.#entry(id)
    this.#setLive(id, { status: 'connecting' })
    let pool: ConnectedPool
    try {
      pool = await this.#options.connector.connect(this.#settings(entry), attempt.signal)
    } catch (error) {
      if (runtime.generation !== generation) return connectionRefusal(describeFailure(error), id)
      return this.#failed(id, describeFailure(error))
    }
    if (runtime.generation !== generation) {
      // Disconnected, changed or deleted meanwhile: this connection is nobody's.
      await this.#logOut(id, pool)
      return connectionRefusal({ name: 'AbortError', message: 'the connection was cancelled' }, id)
    }
    runtime.attempt = undefined
    if (entry.fingerprint !== undefined && pool.fingerprint !== entry.fingerprint) {
      await this.#logOut(id, pool)
      return this.#failed(id, describeFailure(certificateChanged(entry.host, entry.fingerprint, pool.fingerprint)))
    }
    runtime.pool = pool
    runtime.failures = 0
    this.#options.store.update(id, {
      error: null,
      poolNameLabel: pool.poolNameLabel,
      ...(entry.fingerprint === undefined && pool.fingerprint !== undefined ? { fingerprint: pool.fingerprint } : {}),
    })
    this.#setLive(id, { status: 'connected', poolId: pool.poolId, master: pool.master })
    this.#options.log.info({ serverId: id, poolId: pool.poolId }, 'pool connected')
    // A pool that joined another (add_host) is served through that one's entry: its own goes, as the reference unregisters it.
    void pool.merged?.then((into) => {
      if (runtime.pool !== pool || runtime.generation !== generation) return
      this.#options.log.info({ serverId: id, poolId: pool.poolId, into }, 'pool joined another: its entry is removed')
      this.delete(id).catch((error: unknown) => this.#options.log.warn({ serverId: id, error: describeFailure(error).message }, 'the joined pool’s entry could not be removed'))
    })
    void pool.lost.then((reason) => {
      if (runtime.pool !== pool || runtime.generation !== generation) return
      runtime.pool = undefined
      this.#options.log.warn({ serverId: id, poolId: pool.poolId, reason: reason.message }, 'pool connection lost')
      void this.#failed(id, describeFailure(reason))
    })
    return undefined
  }

  /** Records the failure, shows the entry disconnected, and schedules the next attempt unless retrying cannot help. */
  #failed(id: string, failure: ServerError): KeelError {
    const runtime = this.#runtimeOf(id)
    runtime.attempt = undefined
    const entry = this.#options.store.update(id, { error: failure })
    this.#setLive(id, { status: 'disconnected' })
    const retry = entry.enabled && !this.#closed && !isPermanent(failure)
    this.#options.log.warn({ serverId: id, error: failure.message, code: failure.code, retry }, 'pool connection failed')
    if (retry) {
      const delay = backoffDelay(runtime.failures++, this.#options.backoff, this.#options.random)
      runtime.cancelRetry = this.#options.scheduler.schedule(delay, () => {
        runtime.cancelRetry = undefined
        if (this.#runtime.get(id) === runtime) void this.#connect(id)
      })
    }
    return connectionRefusal(failure, id)
  }

  /** Ends whatever runs for the entry: the pending retry, the attempt, the connection. */
  async #stop(id: string): Promise<void> {
    const runtime = this.#runtimeOf(id)
    runtime.generation++
    runtime.cancelRetry?.()
    runtime.cancelRetry = undefined
    runtime.attempt?.abort()
    runtime.attempt = undefined
    runtime.failures = 0
    const pool = runtime.pool
    runtime.pool = undefined
    runtime.live = { status: 'disconnected' }
    if (pool !== undefined) await this.#logOut(id, pool)
  }

  async #logOut(id: string, pool: ConnectedPool): Promise<void> {
    try {
      await pool.disconnect()
    } catch (error) {
      // The session dies with the socket anyway; say so and go on.
      this.#options.log.warn({ serverId: id, error: describeFailure(error).message }, 'pool logout failed')
    }
  }

  #settings(entry: ServerEntry): PoolConnectionSettings {
    return {
      host: entry.host,
      username: entry.username,
      password: this.#options.store.password(entry.id),
      allowUnauthorized: entry.allowUnauthorized,
      readOnly: entry.readOnly,
      ...(entry.fingerprint === undefined ? {} : { fingerprint: entry.fingerprint }),
    }
  }

  #setLive(id: string, live: LiveState): void {
    const runtime = this.#runtime.get(id)
    if (runtime === undefined) return
    runtime.live = live
    this.#publish(id)
  }

  #publish(id: string): void {
    const entry = this.#options.store.get(id)
    const runtime = this.#runtime.get(id)
    if (entry === undefined || runtime === undefined) return
    const previous = this.#records.get(id)
    const record = keepIfEqual<ServerRecord & XoRecord>(previous, serverRecord(entry, runtime.live))
    if (record === previous) return
    this.#records.set(id, record)
    this.#options.bus.publish(previous === undefined ? { kind: 'add', object: record } : { kind: 'update', object: record, previous })
  }

  #entry(id: string): ServerEntry {
    const entry = this.#options.store.get(id)
    if (entry === undefined) throw noSuchObject(id, 'server')
    return entry
  }

  #runtimeOf(id: string): Runtime {
    const runtime = this.#runtime.get(id)
    if (runtime === undefined) throw noSuchObject(id, 'server')
    return runtime
  }
}

function newRuntime(): Runtime {
  return { live: { status: 'disconnected' }, pool: undefined, failures: 0, attempt: undefined, cancelRetry: undefined, generation: 0 }
}
