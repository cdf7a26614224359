import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { KeelError } from '../../errors.js'
import { IndexWaits, DEFAULT_INDEX_WAIT } from '../index-waits.js'
import type { ChangeListener, Created, Driver, ObjectChange, OperationContext, UsageFigures, WaitForOptions, WaitOptions, XoRecord } from '../types.js'
import { poolOrigin } from './address.js'
import { XapiConnection } from './connection.js'
import { XapiDisks } from './disks.js'
import type { TransferTimeouts } from './http-handlers.js'
import { LabHostFacts } from '../lab/host-facts.js'
import { XapiHostFacts } from './host-facts.js'
import { XapiOperations, xapiCapabilities } from './operations.js'
import type { JoinCredentials, PoolMerger } from './operations/context.js'
import { PoolIndex, type PoolIndexOptions } from './pool-index.js'
import { DEFAULT_RECORD_MAX_BYTES, XapiRecorder } from './recorder.js'
import { lastCpuUse, XapiRrdStats } from './stats.js'
import { normalizeFingerprint, type TlsTrust } from './tls.js'
import { XapiError, type ConnectedPool, type PoolConnectionSettings, type PoolConnector, type XapiLocation, type XapiLocator, type XapiPool } from './types.js'

export interface XapiDriverOptions {
  /** ms a disconnected pool's objects stay served (a reconnection within it shows as updates, not a removal and additions) */
  readonly graceDelay?: number
  /** ms settled() and waitFor() wait by default */
  readonly indexWait?: number
  /** accept `http://` pool addresses (tests against the simulator) */
  readonly allowHttp?: boolean
  /** ms for a call without its own timeout */
  readonly callTimeout?: number
  /** ms each host gets to answer a probe for the master */
  readonly probeTimeout?: number
  /** how long the host of a transfer may stay silent (default DEFAULT_TRANSFER_TIMEOUTS) */
  readonly transferTimeouts?: TransferTimeouts
  readonly index?: PoolIndexOptions
  /** pools connected at open() (the servers collection connects the others) */
  readonly pools?: readonly PoolConnectionSettings[]
  /** record mode: every connection's calls and event batches in a file of this folder (recorder.ts) */
  readonly record?: { readonly dir: string; readonly maxBytes?: number }
  readonly log?: Logger
  /** ms since the epoch: where the statistics' window ends (the hosts' RRDs are asked from then back) */
  readonly clock?: () => number
  /** where uploads wait until their exact length is known (XapiDisksOptions.tempDir) */
  readonly tempDir?: string
}

interface Pool {
  readonly connection: XapiConnection
  readonly index: PoolIndex
  readonly lost: Promise<Error>
  /** the credentials it was connected with, what a host joining it is given with its master's address */
  readonly login: { readonly username: string; readonly password: string }
  /** tells whoever connected it that it merged into the pool `into` (ConnectedPool.merged) */
  readonly merged: (into: string) => void
  /** settles `lost` */
  readonly reportLost: (error: Error) => void
}

interface Held {
  readonly changes: ObjectChange[]
  /** the connection was lost meanwhile */
  lost?: Error
}

/** The master's address as pool.join takes it: XAPI's port is implied, another one (a simulator's) is given. */
const joinAddress = (origin: URL): string => (origin.port === '' ? origin.hostname : origin.host)

const trustOf = (settings: PoolConnectionSettings): TlsTrust =>
  settings.fingerprint !== undefined ? { mode: 'pin', fingerprint: settings.fingerprint } : settings.allowUnauthorized ? { mode: 'insecure' } : { mode: 'verify' }

/**
 * Keel's driver for XCP-ng and XenServer pools: every collection is the
 * union of the connected pools, each object tagged with its pool (`$pool`).
 * The index of each pool is kept by its event loop (pool-index.ts); the
 * operations act through the pool connections (operations.ts, disks.ts).
 */
export class XapiDriver implements Driver, PoolConnector, XapiLocator, PoolMerger {
  readonly capabilities = xapiCapabilities
  readonly disks: XapiDisks
  readonly stats: XapiRrdStats
  readonly hostFacts: XapiHostFacts
  readonly #options: XapiDriverOptions
  readonly #operations: XapiOperations
  readonly #pools = new Map<string, Pool>()
  /** pools being connected: a second connection to one is refused before it is indexed */
  readonly #connecting = new Set<string>()
  readonly #byType = new Map<string, Map<string, XoRecord>>()
  readonly #byId = new Map<string, XoRecord>()
  readonly #listeners = new Set<ChangeListener>()
  readonly #waits: IndexWaits
  /** removals of disconnected pools' objects, waiting for the grace delay */
  readonly #leaving = new Map<string, NodeJS.Timeout>()
  /** the changes of pools joining another (merge), held until the join's outcome */
  readonly #held = new Map<string, Held>()
  /** each host's CPU use, 0 to 1, as last read from its RRD */
  readonly #hostCpu = new Map<string, number>()
  #open = false

  constructor(options: XapiDriverOptions = {}) {
    this.#options = options
    this.#waits = new IndexWaits((id) => this.#byId.get(id), options.indexWait ?? DEFAULT_INDEX_WAIT)
    this.#operations = new XapiOperations(this, this, this)
    this.disks = new XapiDisks(this, this, options.tempDir === undefined ? {} : { tempDir: options.tempDir })
    this.stats = new XapiRrdStats(this, (id) => this.#byId.get(id), options.clock)
    this.hostFacts = new XapiHostFacts(this, new LabHostFacts(this))
  }

  async open(): Promise<void> {
    const controller = new AbortController()
    for (const settings of this.#options.pools ?? []) await this.connect(settings, controller.signal)
    this.#open = true
  }

  async close(): Promise<void> {
    this.#open = false
    for (const timer of this.#leaving.values()) clearTimeout(timer)
    this.#leaving.clear()
    await this.disks.settled()
    await Promise.all([...this.#pools.values()].map((pool) => this.#stop(pool)))
    this.#pools.clear()
    this.#waits.close(new KeelError('SERVICE_UNAVAILABLE', 'the XAPI driver is closed'))
  }

  isOpen(): boolean {
    return this.#open
  }

  async connect(settings: PoolConnectionSettings, signal: AbortSignal): Promise<ConnectedPool> {
    const origin = poolOrigin(settings.host, this.#options.allowHttp ?? false)
    const { record, log } = this.#options
    const recorder =
      record === undefined ? undefined : await XapiRecorder.open({ dir: record.dir, host: origin.host, maxBytes: record.maxBytes ?? DEFAULT_RECORD_MAX_BYTES, ...(log === undefined ? {} : { log }) })
    if (recorder !== undefined) log?.info({ file: recorder.path }, 'XAPI: recording the connection')
    const connection = new XapiConnection({
      origin,
      username: settings.username,
      password: settings.password,
      trust: trustOf(settings),
      ...(this.#options.callTimeout === undefined ? {} : { callTimeout: this.#options.callTimeout }),
      ...(this.#options.probeTimeout === undefined ? {} : { probeTimeout: this.#options.probeTimeout }),
      ...(this.#options.transferTimeouts === undefined ? {} : { transferTimeouts: this.#options.transferTimeouts }),
      ...(log === undefined ? {} : { log }),
      ...(recorder === undefined ? {} : { recorder }),
    })
    const abort = (): void => void connection.close()
    signal.addEventListener('abort', abort, { once: true })
    let index: PoolIndex | undefined
    let claimed: string | undefined
    try {
      await connection.open()
      const { poolId } = connection
      if (this.#pools.has(poolId) || this.#connecting.has(poolId)) throw new XapiError('POOL_ALREADY_CONNECTED', [poolId])
      this.#connecting.add((claimed = poolId))
      let reportLost: (error: Error) => void = () => undefined
      const lost = new Promise<Error>((resolve) => (reportLost = resolve))
      let reportMerged: (into: string) => void = () => undefined
      const merged = new Promise<string>((resolve) => (reportMerged = resolve))
      // Objects still served from a connection lost within the grace delay are diffed against, not removed and added again.
      const leaving = this.#leaving.get(poolId)
      clearTimeout(leaving)
      this.#leaving.delete(poolId)
      const previous = [...this.#byId.values()].filter((record) => record['$pool'] === poolId)
      index = new PoolIndex(
        connection,
        {
          apply: (changes) => {
            const held = this.#held.get(poolId)
            if (held === undefined) this.#apply(changes)
            else held.changes.push(...changes)
          },
          lost: (error) => {
            if (this.#pools.get(poolId)?.connection !== connection) return
            const held = this.#held.get(poolId)
            // Lost while joining another pool: the join's outcome says whether it is a loss.
            if (held !== undefined) {
              held.lost = error
              return
            }
            this.#pools.delete(poolId)
            void this.#stop(pool).then(() => {
              this.#leave(poolId)
              reportLost(error)
            })
          },
        },
        { ...this.#options.index, ...(this.#options.log === undefined ? {} : { log: this.#options.log }) },
        previous,
      )
      const login = { username: settings.username, password: settings.password }
      const pool: Pool = { connection, index, lost, login, merged: reportMerged, reportLost: (error) => reportLost(error) }
      await index.start()
      signal.throwIfAborted()
      this.#pools.set(poolId, pool)
      const record = this.#byId.get(poolId)
      return {
        poolId,
        poolNameLabel: String(record?.['name_label'] ?? ''),
        master: String(record?.['master'] ?? ''),
        fingerprint: connection.fingerprint === undefined ? undefined : normalizeFingerprint(connection.fingerprint),
        lost,
        merged,
        disconnect: async () => {
          if (this.#pools.get(poolId) !== pool) return
          this.#pools.delete(poolId)
          await this.#stop(pool)
          this.#leave(poolId)
        },
      }
    } catch (error) {
      await index?.stop()
      await connection.close()
      // What a failed connection published, or a lost one left, goes as any disconnected pool's objects go.
      if (claimed !== undefined && !this.#pools.has(claimed) && this.#served(claimed)) this.#leave(claimed)
      throw error
    } finally {
      if (claimed !== undefined) this.#connecting.delete(claimed)
      signal.removeEventListener('abort', abort)
    }
  }

  /** the pools connected now */
  get pools(): readonly XapiPool[] {
    return [...this.#pools.values()].map((pool) => pool.connection)
  }

  objectsOfType(type: string): Iterable<XoRecord> {
    return this.#byType.get(type)?.values() ?? []
  }

  countOfType(type: string): number {
    return this.#byType.get(type)?.size ?? 0
  }

  getObject(id: string): XoRecord | undefined {
    return this.#byId.get(id)
  }

  /** Memory in use from the metrics records; a host's CPU use as `readUsage` last read it from its RRD (a VM's: none). */
  usage(object: XoRecord): UsageFigures {
    const memory = object['memory']
    const usage = typeof memory === 'object' && memory !== null && 'usage' in memory && typeof memory.usage === 'number' ? memory.usage : undefined
    const cpu = this.#hostCpu.get(object.id) ?? 0
    return usage === undefined ? { cpu } : { cpu, memory: usage }
  }

  /** The running hosts' CPU use, the last point of their `seconds` RRD archive, as the reference's dashboard reads it. */
  async readUsage(objects: Iterable<XoRecord>): Promise<void> {
    const hosts = [...objects].filter((object) => object.type === 'host' && object['power_state'] === 'Running')
    await Promise.all(
      hosts.map(async (host) => {
        try {
          this.#hostCpu.set(host.id, lastCpuUse(await this.stats.hostStats(host, 'seconds')))
        } catch (error) {
          // A host whose RRD cannot be read shows no CPU figure rather than failing what asked for it.
          this.#hostCpu.delete(host.id)
          this.#options.log?.warn({ err: error, host: host.id }, 'XAPI: the host\u2019s RRD could not be read')
        }
      }),
    )
  }

  subscribe(listener: ChangeListener): () => void {
    const entry: ChangeListener = (change) => listener(change)
    this.#listeners.add(entry)
    return () => {
      this.#listeners.delete(entry)
    }
  }

  async settled(options: WaitOptions = {}): Promise<void> {
    const timeout = options.timeout ?? this.#options.indexWait ?? DEFAULT_INDEX_WAIT
    await Promise.all([...this.#pools.values()].map((pool) => pool.connection.settled({ timeout })))
  }

  waitFor(id: string, options?: WaitForOptions): Promise<XoRecord> {
    return this.#waits.waitFor(id, options)
  }

  locate(record: XoRecord): XapiLocation | undefined {
    const pool = this.#pools.get(String(record['$pool']))
    const ref = record['_xapiRef']
    if (pool === undefined || typeof ref !== 'string') return undefined
    const cls = pool.index.classOf(ref)
    return cls === undefined || pool.index.records.get(ref)?.id !== record.id ? undefined : { pool: pool.connection, ref, cls }
  }

  /** A raw connection through the CONNECT handler at `location` on `pool` (its console relay's), closed with the pool's connection. */
  tunnel(pool: XapiPool, location: string): Promise<Duplex> {
    const connection = this.#pools.get(pool.poolId)?.connection
    if (connection === undefined) return Promise.reject(new XapiError('HANDLE_INVALID', ['pool', pool.poolId]))
    return connection.tunnel(location)
  }

  joinCredentials(poolId: string): JoinCredentials | undefined {
    const pool = this.#pools.get(poolId)
    // The master the connection is on now, not the address configured: a member's would answer the joiner HOST_IS_SLAVE.
    return pool === undefined ? undefined : { address: joinAddress(pool.connection.master), ...pool.login }
  }

  /**
   * A pool joining another (add_host). The joiner's changes are held while
   * `join` runs, so that its pool emptying out reaches no watcher: the
   * objects that move (the host, its PIFs and local SRs) show as updates once
   * the target's index has them, and only what is left of the joiner (its
   * pool, what the join dropped) leaves. Its connection ends, as the
   * reference unregisters a merged pool's server. A failed join releases the
   * held changes as they came.
   */
  async merge(joinerPoolId: string, targetPoolId: string, hostId: string, join: (joiner: XapiPool) => Promise<void>): Promise<void> {
    const joiner = this.#pools.get(joinerPoolId)
    const target = this.#pools.get(targetPoolId)
    if (joiner === undefined || target === undefined) throw new XapiError('HANDLE_INVALID', ['pool', joiner === undefined ? joinerPoolId : targetPoolId])
    const held: Held = { changes: [] }
    this.#held.set(joinerPoolId, held)
    try {
      await join(joiner.connection)
    } catch (error) {
      this.#held.delete(joinerPoolId)
      this.#apply(held.changes)
      if (held.lost !== undefined) {
        this.#pools.delete(joinerPoolId)
        await this.#stop(joiner)
        this.#leave(joinerPoolId)
        joiner.reportLost(held.lost)
      }
      throw error
    }
    this.#pools.delete(joinerPoolId)
    await this.#stop(joiner)
    this.#held.delete(joinerPoolId)
    joiner.merged(targetPoolId)
    try {
      await target.connection.settled()
      await this.waitFor(hostId, { until: (record) => record['$pool'] === targetPoolId })
    } finally {
      const left = [...this.#byId.values()].filter((record) => record['$pool'] === joinerPoolId)
      this.#apply(left.map((object) => ({ kind: 'remove', object })))
    }
  }

  recordOf(pool: XapiPool, ref: string): XoRecord | undefined {
    return this.#pools.get(pool.poolId)?.index.records.get(ref)
  }

  perform(object: XoRecord, action: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created | undefined> {
    return this.#operations.perform(object, action, params, context)
  }

  update(object: XoRecord, patch: Readonly<Record<string, unknown>>): Promise<void> {
    return this.#operations.update(object, patch)
  }

  destroy(object: XoRecord, context: OperationContext): Promise<void> {
    return this.#operations.destroy(object, context)
  }

  setTag(object: XoRecord, tag: string, present: boolean): Promise<void> {
    return this.#operations.setTag(object, tag, present)
  }

  create(type: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created> {
    return this.#operations.create(type, params, context)
  }

  #served(poolId: string): boolean {
    for (const record of this.#byId.values()) if (record['$pool'] === poolId) return true
    return false
  }

  async #stop(pool: Pool): Promise<void> {
    await pool.index.stop()
    await pool.connection.close()
  }

  /** A disconnected pool's objects leave after the grace delay, unless it connects again in the meantime. */
  #leave(poolId: string): void {
    const remove = (): void => {
      this.#leaving.delete(poolId)
      if (this.#pools.has(poolId)) return
      const gone = [...this.#byId.values()].filter((record) => record['$pool'] === poolId)
      this.#apply(gone.map((object) => ({ kind: 'remove', object })))
    }
    const grace = this.#options.graceDelay ?? 60_000
    if (grace === 0) remove()
    else this.#leaving.set(poolId, setTimeout(remove, grace))
  }

  /** Stores a batch, then tells the waits and the listeners, in order. */
  #apply(batch: readonly ObjectChange[]): void {
    // An object another pool had (a host that joined, with its PIFs and SRs) is updated, not added twice.
    const changes = batch.map((change): ObjectChange => {
      const held = change.kind === 'add' ? this.#byId.get(change.object.id) : undefined
      return held === undefined ? change : { kind: 'update', object: change.object, previous: held }
    })
    for (const { kind, object, previous } of changes) {
      if (kind === 'remove') {
        this.#byId.delete(object.id)
        this.#byType.get(object.type)?.delete(object.id)
        continue
      }
      if (previous !== undefined && previous.type !== object.type) this.#byType.get(previous.type)?.delete(previous.id)
      this.#byId.set(object.id, object)
      const ofType = this.#byType.get(object.type) ?? new Map<string, XoRecord>()
      this.#byType.set(object.type, ofType)
      ofType.set(object.id, object)
    }
    for (const { object } of changes) this.#waits.changed(object.id)
    // A failing listener is its own bug: the batch is applied, the other listeners are told, the event loop goes on.
    for (const change of changes) {
      for (const listener of this.#listeners) {
        try {
          listener(change)
        } catch (error) {
          this.#options.log?.error({ err: error }, 'a change listener failed')
        }
      }
    }
  }
}
