import { LabRandom } from '../../src/driver/lab/random.js'
import { indexTimeout, IndexWaits } from '../../src/driver/index-waits.js'
import type { ChangeListener, DiskAccess, Driver, ObjectChange, WaitForOptions, WaitOptions, XoRecord } from '../../src/driver/types.js'
import { KeelError } from '../../src/errors.js'
import { recordSchemas } from '../../src/model/records.js'

/**
 * A driver as a pool driver fed by a change stream behaves: it wraps another
 * driver and serves its own index, fed by the inner driver's changes late
 * (each after its own delay) and out of step across objects (a change to one
 * object may show before an earlier change to another), each object's own
 * changes kept in order. Operations go to the inner driver with the record as
 * it knows it (the source checks its own state, as XAPI does), so only what
 * the service reads lags. `settled` and `waitFor` work over this index only,
 * which makes any caller that reads its writes without them fail.
 */

/** ms a change waits before it reaches the index */
export type Delay = (change: ObjectChange) => number

export interface LaggedOptions {
  readonly delay: Delay
  /** default timeout of `settled` and `waitFor` */
  readonly timeout?: number
}

/** Uniform delays in [0, max] ms from a seed, so a failing run can be replayed. */
export function randomDelays(seed: number, max: number): Delay {
  const next = new LabRandom(seed).stream('lag')
  return () => Math.floor((next() / 2 ** 32) * (max + 1))
}

interface Pending {
  readonly change: ObjectChange
  /** position in the inner driver's commit order */
  readonly seq: number
  readonly due: number
}

interface Barrier {
  readonly seq: number
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
  readonly timer: NodeJS.Timeout
}

const TYPES = Object.keys(recordSchemas)
const DEFAULT_TIMEOUT = 10_000

export class LaggedDriver implements Driver {
  readonly #inner: Driver
  readonly #delay: Delay
  readonly #timeout: number
  readonly #objects = new Map<string, XoRecord>()
  /** per type; insertion order may stray from the inner order (out-of-step adds), `#sorted` puts it back */
  readonly #byType = new Map<string, Map<string, XoRecord>>()
  /** each id's place in the inner driver's order: at load, or when its add (or retyping) was committed */
  readonly #rank = new Map<string, number>()
  /** the highest rank indexed per type: a lower one arriving later is an out-of-step add */
  readonly #lastRank = new Map<string, number>()
  readonly #unsorted = new Set<string>()
  readonly #listeners = new Set<ChangeListener>()
  readonly #queues = new Map<string, { pending: Pending[]; timer: NodeJS.Timeout }>()
  readonly #barriers = new Set<Barrier>()
  readonly #waits: IndexWaits
  #seq = 0
  #unsubscribe: (() => void) | undefined
  readonly disks: DiskAccess | undefined
  readonly create: Driver['create']

  constructor(inner: Driver, options: LaggedOptions) {
    this.#inner = inner
    this.#delay = options.delay
    this.#timeout = options.timeout ?? DEFAULT_TIMEOUT
    this.#waits = new IndexWaits((id) => this.#objects.get(id), this.#timeout)
    this.disks = inner.disks === undefined ? undefined : this.#wrapDisks(inner.disks)
    const create = inner.create?.bind(inner)
    this.create = create === undefined ? undefined : (type, params, context) => create(type, params, context)
  }

  get capabilities(): Driver['capabilities'] {
    return this.#inner.capabilities
  }

  async open(): Promise<void> {
    await this.#inner.open()
    // Subscribed and loaded in one synchronous step: no change falls between the two.
    this.#unsubscribe = this.#inner.subscribe((change) => this.#receive(change))
    for (const type of TYPES) for (const record of this.#inner.objectsOfType(type)) this.#index(record, ++this.#seq)
  }

  async close(): Promise<void> {
    this.#unsubscribe?.()
    for (const { timer } of this.#queues.values()) clearTimeout(timer)
    this.#queues.clear()
    const closed = new KeelError('SERVICE_UNAVAILABLE', 'the driver closed', { reason: 'closed' })
    for (const barrier of this.#barriers) {
      clearTimeout(barrier.timer)
      barrier.reject(closed)
    }
    this.#barriers.clear()
    this.#waits.close(closed)
    this.#listeners.clear()
    await this.#inner.close()
  }

  isOpen(): boolean {
    return this.#inner.isOpen()
  }

  objectsOfType(type: string): Iterable<XoRecord> {
    const objects = this.#sorted(type)
    return objects === undefined ? [] : { [Symbol.iterator]: () => objects.values() }
  }

  countOfType(type: string): number {
    return this.#byType.get(type)?.size ?? 0
  }

  getObject(id: string): XoRecord | undefined {
    return this.#objects.get(id)
  }

  usage(object: XoRecord, now: number): ReturnType<Driver['usage']> {
    return this.#inner.usage(object, now)
  }

  subscribe(listener: ChangeListener): () => void {
    const entry: ChangeListener = (change) => listener(change)
    this.#listeners.add(entry)
    return () => {
      this.#listeners.delete(entry)
    }
  }

  settled(options: WaitOptions = {}): Promise<void> {
    // The inner driver publishes as it commits: every change committed so far has a seq up to this one.
    const seq = this.#seq
    if (!this.#pendingUpTo(seq)) return Promise.resolve()
    const timeout = options.timeout ?? this.#timeout
    return new Promise((resolve, reject) => {
      const barrier: Barrier = {
        seq,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#barriers.delete(barrier)
          reject(indexTimeout(timeout))
        }, timeout),
      }
      this.#barriers.add(barrier)
    })
  }

  waitFor(id: string, options?: WaitForOptions): Promise<XoRecord> {
    return this.#waits.waitFor(id, options)
  }

  perform(...[object, ...rest]: Parameters<Driver['perform']>): ReturnType<Driver['perform']> {
    return this.#inner.perform(this.#atSource(object), ...rest)
  }

  update(...[object, ...rest]: Parameters<Driver['update']>): ReturnType<Driver['update']> {
    return this.#inner.update(this.#atSource(object), ...rest)
  }

  destroy(...[object, ...rest]: Parameters<Driver['destroy']>): ReturnType<Driver['destroy']> {
    return this.#inner.destroy(this.#atSource(object), ...rest)
  }

  setTag(...[object, ...rest]: Parameters<Driver['setTag']>): ReturnType<Driver['setTag']> {
    return this.#inner.setTag(this.#atSource(object), ...rest)
  }

  /** The object as the source knows it now; one it no longer has is passed as given, for the source to refuse. */
  #atSource(object: XoRecord): XoRecord {
    return this.#inner.getObject(object.id) ?? object
  }

  #wrapDisks(disks: DiskAccess): DiskAccess {
    const at = (record: XoRecord): XoRecord => this.#atSource(record)
    return {
      allocation: (vdi) => disks.allocation(at(vdi)),
      openRead: (vdi) => disks.openRead(at(vdi)),
      changedBlocks: (vdi, base) => disks.changedBlocks(at(vdi), at(base)),
      readBlocks: (vdi, indexes, options) => disks.readBlocks(at(vdi), indexes, options),
      openWrite: (vdi, options) => disks.openWrite(at(vdi), options),
      importVdi: (sr, vdi, userId) => disks.importVdi(at(sr), vdi, userId),
      importVm: (sr, description, userId) => disks.importVm(at(sr), description, userId),
    }
  }

  #receive(change: ObjectChange): void {
    const { id } = change.object
    const pending: Pending = { change, seq: ++this.#seq, due: Date.now() + Math.max(0, this.#delay(change)) }
    const queue = this.#queues.get(id)
    if (queue !== undefined) queue.pending.push(pending)
    else this.#queues.set(id, { pending: [pending], timer: this.#schedule(id, pending) })
  }

  #schedule(id: string, next: Pending): NodeJS.Timeout {
    return setTimeout(() => this.#deliver(id), Math.max(0, next.due - Date.now()))
  }

  /** Applies the oldest pending change of `id`, publishes it, and schedules the next one of that object. */
  #deliver(id: string): void {
    const queue = this.#queues.get(id)
    const head = queue?.pending.shift()
    if (queue === undefined || head === undefined) return
    const next = queue.pending[0]
    if (next === undefined) this.#queues.delete(id)
    else queue.timer = this.#schedule(id, next)
    const { change, seq } = head
    if (change.kind === 'remove') this.#unindex(change.object)
    else {
      const retyped = change.previous !== undefined && change.previous.type !== change.object.type
      if (retyped && change.previous !== undefined) this.#unindex(change.previous)
      this.#index(change.object, change.kind === 'add' || retyped ? seq : undefined)
    }
    this.#waits.changed(id)
    const errors: unknown[] = []
    for (const listener of this.#listeners) {
      try {
        listener(change)
      } catch (error) {
        errors.push(error)
      }
    }
    this.#releaseBarriers()
    if (errors.length > 0) throw new AggregateError(errors, `${errors.length} change listener call(s) failed`)
  }

  #pendingUpTo(seq: number): boolean {
    for (const { pending } of this.#queues.values()) if ((pending[0]?.seq ?? Infinity) <= seq) return true
    return false
  }

  #releaseBarriers(): void {
    for (const barrier of this.#barriers) {
      if (this.#pendingUpTo(barrier.seq)) continue
      clearTimeout(barrier.timer)
      this.#barriers.delete(barrier)
      barrier.resolve()
    }
  }

  /** Indexes a record; a new rank places it in the inner driver's order. */
  #index(record: XoRecord, rank: number | undefined): void {
    this.#objects.set(record.id, record)
    let ofType = this.#byType.get(record.type)
    if (ofType === undefined) this.#byType.set(record.type, (ofType = new Map()))
    if (rank !== undefined) {
      if ((this.#lastRank.get(record.type) ?? 0) > rank) this.#unsorted.add(record.type)
      else this.#lastRank.set(record.type, rank)
      this.#rank.set(record.id, rank)
    }
    ofType.set(record.id, record)
  }

  #unindex(record: XoRecord): void {
    this.#objects.delete(record.id)
    this.#rank.delete(record.id)
    this.#byType.get(record.type)?.delete(record.id)
  }

  #sorted(type: string): Map<string, XoRecord> | undefined {
    const objects = this.#byType.get(type)
    if (objects === undefined || !this.#unsorted.delete(type)) return objects
    const sorted = new Map([...objects].sort(([a], [b]) => (this.#rank.get(a) ?? 0) - (this.#rank.get(b) ?? 0)))
    this.#byType.set(type, sorted)
    return sorted
  }
}
