import { setMaxListeners } from 'node:events'
import { isDeepStrictEqual } from 'node:util'
import type { Logger } from 'pino'
import { xapiClassOfEvent } from '../../xapi/datamodel/index.js'
import { deepFreeze } from '../lab/deep-freeze.js'
import type { ObjectChange, XoRecord } from '../types.js'
import type { XapiConnection } from './connection.js'
import { isRef, type MappingContext } from './mapping/context.js'
import { mappedFields } from './mapping/fields.js'
import { vmId, WATCHED_CLASSES, xoRecord, type XapiObject, type XapiRecord } from './mapping/index.js'
import type { TaskRecord } from './tasks.js'
import { isTransportError } from './transport.js'
import { XapiError } from './types.js'

export interface PoolIndexOptions {
  /** seconds event.from waits for a change (XO: 60.1) */
  readonly pollTimeout?: number
  /** ms before polling again after a XAPI error other than lost events */
  readonly retryDelay?: number
  readonly log?: Logger
}

/** What the index tells its driver: a batch of changes to publish, in order, and the loss of the pool. */
export interface PoolIndexSink {
  apply(changes: readonly ObjectChange[]): void
  lost(error: Error): void
}

interface EventRecord {
  readonly class: string
  readonly operation: string
  readonly ref: string
  readonly snapshot?: XapiRecord
}

interface EventBatch {
  readonly events: readonly EventRecord[]
  readonly token: string
}

const RESYNC = new Set(['EVENTS_LOST', 'EVENT_FROM_TOKEN_PARSE_FAILURE', 'SESSION_INVALID'])
const POLLED = [...WATCHED_CLASSES, 'task']
const delay = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })

/**
 * One pool's objects: `get_all_records` of the watched classes, then the
 * `event.from` loop, a batch at a time. Each batch changes the XAPI records,
 * then maps again what it changed and what read it (a VM reads its metrics,
 * a pool its master): a record that maps to what it was keeps its identity,
 * one that changes is a new frozen object. A full fetch (at start, after
 * EVENTS_LOST or a new session) is diffed against the records held, so the
 * driver's subscribers see additions, updates and removals, never a reset.
 */
export class PoolIndex {
  readonly #connection: XapiConnection
  readonly #sink: PoolIndexSink
  readonly #options: PoolIndexOptions
  readonly #objects = new Map<string, XapiObject>()
  readonly #records = new Map<string, XoRecord>()
  readonly #refOfUuid = new Map<string, string>()
  readonly #hosts = new Set<string>()
  /** for each ref, the records whose mapping read it: most refs have one, held without a Set (80,000 Sets took 12 MiB at 10,000 VMs) */
  readonly #readers = new Map<string, string | Set<string>>()
  /** for each record, what its mapping read */
  readonly #reads = new Map<string, readonly string[]>()
  readonly #stop = new AbortController()
  readonly #context: MappingContext
  #reading: Set<string> | undefined
  #token = ''
  #generation = -1
  #loop: Promise<void> | undefined

  /** `previous`: the pool's records still served from a connection before this one, to diff against. */
  constructor(connection: XapiConnection, sink: PoolIndexSink, options: PoolIndexOptions = {}, previous: Iterable<XoRecord> = []) {
    this.#connection = connection
    this.#sink = sink
    this.#options = options
    // Every call of a full fetch listens to it, one per class.
    setMaxListeners(0, this.#stop.signal)
    for (const record of previous) {
      const ref = record['_xapiRef']
      if (typeof ref === 'string') this.#records.set(ref, record)
    }
    const object = (ref: unknown): XapiObject | undefined => {
      if (!isRef(ref)) return undefined
      this.#reading?.add(ref)
      return this.#objects.get(ref)
    }
    this.#context = {
      poolId: connection.poolId,
      object,
      id: (ref) => {
        const found = isRef(ref) ? this.#objects.get(ref) : undefined
        if (found === undefined) return undefined
        return found.cls === 'VM' ? vmId(found.record, connection.poolId) : String(found.record['uuid'])
      },
      idOfUuid: (uuid) => {
        const ref = this.#refOfUuid.get(uuid)
        return ref === undefined ? undefined : this.#context.id(ref)
      },
    }
  }

  /** the XO records of the pool, by ref */
  get records(): ReadonlyMap<string, XoRecord> {
    return this.#records
  }

  classOf(ref: string): string | undefined {
    return this.#objects.get(ref)?.cls
  }

  /** Fetches every object, publishes the differences, then follows the events in the background. */
  async start(): Promise<void> {
    await this.#resync()
    this.#loop = this.#follow()
  }

  async stop(): Promise<void> {
    this.#stop.abort()
    await this.#loop
  }

  async #resync(): Promise<void> {
    // The token is taken before the fetch, so that nothing changed during it is missed.
    const token = await this.#connection.call<string>('event.inject', ['pool', this.#connection.poolRef])
    const generation = this.#connection.sessionGeneration
    const fetched = await Promise.all(WATCHED_CLASSES.map(async (cls) => [cls, await this.#fetch(cls)] as const))
    const changed = new Set(this.#objects.keys())
    for (const ref of this.#records.keys()) changed.add(ref)
    this.#objects.clear()
    this.#refOfUuid.clear()
    this.#hosts.clear()
    for (const [cls, records] of fetched) {
      for (const [ref, record] of Object.entries(records)) {
        this.#put({ cls, ref, record })
        changed.add(ref)
      }
    }
    this.#token = token
    this.#generation = generation
    try {
      this.#publish(changed)
    } finally {
      this.#connection.barrier.reset(token)
    }
    // The tasks' own events are not fetched above: those followed are read once more, now that what follows the token will come.
    await this.#connection.tasks.reread((ref) => this.#connection.call<TaskRecord>('task.get_record', [ref]))
  }

  /** Every record of a class; from the event log when the host has no get_all_records for it (the simulator's messages). */
  async #fetch(cls: string): Promise<Record<string, XapiRecord>> {
    const { signal } = this.#stop
    // Each record trimmed as its reply is read: the whole ones die young.
    const member = (_ref: string, record: unknown): XapiRecord => mappedFields(cls, record as XapiRecord)
    try {
      return await this.#connection.call<Record<string, XapiRecord>>(`${cls}.get_all_records`, [], { signal, member })
    } catch (error) {
      if (!(error instanceof XapiError && error.code === 'MESSAGE_METHOD_UNKNOWN')) throw error
      const { events } = await this.#connection.call<EventBatch>('event.from', [[cls], '', 0], { signal })
      return Object.fromEntries(events.flatMap((event) => (event.operation === 'del' || event.snapshot === undefined ? [] : [[event.ref, mappedFields(cls, event.snapshot)]])))
    }
  }

  async #follow(): Promise<void> {
    const { signal } = this.#stop
    const timeout = this.#options.pollTimeout ?? 60.1
    while (!signal.aborted) {
      try {
        if (this.#connection.sessionGeneration !== this.#generation) {
          await this.#resync()
          continue
        }
        const batch = await this.#connection.poll<EventBatch>('event.from', [POLLED, this.#token, timeout], { signal, timeout: timeout * 1000 + 6_000 })
        if (signal.aborted) return
        this.#applyBatch(batch)
      } catch (error) {
        if (signal.aborted) return
        const log = this.#options.log?.child({ pool: this.#connection.poolId })
        if (error instanceof XapiError && RESYNC.has(error.code)) {
          log?.info({ code: error.code }, 'XAPI: fetching every object again')
          // Resynced at the top of the loop.
          this.#generation = -1
          continue
        }
        if (isTransportError(error)) {
          // The connection has probed every member already: the pool is gone.
          log?.error({ err: error }, 'XAPI: the pool is lost')
          this.#sink.lost(error)
          return
        }
        log?.warn({ err: error }, 'XAPI: event.from failed, polling again')
        await delay(this.#options.retryDelay ?? 1_000, signal)
      }
    }
  }

  #applyBatch(batch: EventBatch): void {
    const changed = new Set<string>()
    for (const event of batch.events) {
      const cls = xapiClassOfEvent(event.class)?.name
      if (cls === 'task') {
        this.#connection.tasks.changed(event.ref, event.operation === 'del' ? undefined : event.snapshot)
        continue
      }
      if (cls === undefined) continue
      if (event.operation === 'del') this.#remove(event.ref)
      else if (event.snapshot !== undefined) this.#put({ cls, ref: event.ref, record: mappedFields(cls, event.snapshot) })
      changed.add(event.ref)
    }
    this.#token = batch.token
    try {
      this.#publish(changed)
    } finally {
      this.#connection.barrier.reached(batch.token)
    }
  }

  #put(object: XapiObject): void {
    this.#objects.set(object.ref, object)
    const uuid = object.record['uuid']
    if (typeof uuid === 'string') this.#refOfUuid.set(uuid, object.ref)
    if (object.cls === 'host') {
      this.#hosts.add(object.ref)
      this.#updateMembers()
    }
  }

  /** The hosts' addresses, for the connection to probe when the master stops answering. */
  #updateMembers(): void {
    this.#connection.members = [...this.#hosts].map((ref) => String(this.#objects.get(ref)?.record['address'] ?? ''))
  }

  #remove(ref: string): void {
    const uuid = this.#objects.get(ref)?.record['uuid']
    if (typeof uuid === 'string' && this.#refOfUuid.get(uuid) === ref) this.#refOfUuid.delete(uuid)
    this.#objects.delete(ref)
    if (this.#hosts.delete(ref)) this.#updateMembers()
  }

  /** Maps again the changed refs and their readers, and hands the differences to the sink in one batch. */
  #publish(changed: ReadonlySet<string>): void {
    const dirty = new Set(changed)
    for (const ref of changed) {
      const readers = this.#readers.get(ref)
      if (typeof readers === 'string') dirty.add(readers)
      else for (const reader of readers ?? []) dirty.add(reader)
    }
    const changes: ObjectChange[] = []
    for (const ref of dirty) {
      const previous = this.#records.get(ref)
      const object = this.#objects.get(ref)
      const fields = object === undefined ? undefined : this.#map(object)
      if (fields === undefined) {
        this.#forgetReads(ref)
        if (previous === undefined) continue
        this.#records.delete(ref)
        changes.push({ kind: 'remove', object: previous, previous })
        continue
      }
      if (previous !== undefined && isDeepStrictEqual(previous, fields)) continue
      const record = deepFreeze(fields as XoRecord)
      this.#records.set(ref, record)
      if (previous === undefined) changes.push({ kind: 'add', object: record })
      // A VM becoming a default template changes id (XO scopes those by pool): another object to whoever follows ids.
      else if (previous.id !== record.id) changes.push({ kind: 'remove', object: previous, previous }, { kind: 'add', object: record })
      else changes.push({ kind: 'update', object: record, previous })
    }
    if (changes.length > 0) this.#sink.apply(changes)
  }

  #map(object: XapiObject): Record<string, unknown> | undefined {
    const reading = new Set<string>()
    this.#reading = reading
    let fields
    try {
      fields = xoRecord(object, this.#context)
    } finally {
      this.#reading = undefined
    }
    this.#forgetReads(object.ref)
    if (fields === undefined) return undefined
    this.#reads.set(object.ref, [...reading])
    for (const ref of reading) {
      const readers = this.#readers.get(ref)
      if (readers === undefined || readers === object.ref) this.#readers.set(ref, object.ref)
      else if (typeof readers === 'string') this.#readers.set(ref, new Set([readers, object.ref]))
      else readers.add(object.ref)
    }
    return fields
  }

  #forgetReads(ref: string): void {
    for (const read of this.#reads.get(ref) ?? []) {
      const readers = this.#readers.get(read)
      if (readers === ref || (typeof readers === 'object' && readers.delete(ref) && readers.size === 0)) this.#readers.delete(read)
    }
    this.#reads.delete(ref)
  }
}
