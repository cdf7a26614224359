import { LabDiskAccess } from './disk-access.js'
import { LabDisks, type FolderUsage } from './disks.js'
import { seedDiskContent } from './seed-disks.js'
import { join } from 'node:path'
import { alreadyExists, KeelError, noSuchObject } from '../../errors.js'
import { taggableType } from '../../model/operations.js'
import { fixturesDir } from '../../paths.js'
import type { Db } from '../../store/database.js'
import { notDeclared } from '../capabilities.js'
import { IndexWaits } from '../index-waits.js'
import type { ChangeKind, ChangeListener, Created, Driver, ObjectChange, OperationContext, UsageFigures, WaitForOptions, XoRecord } from '../types.js'
import { deepFreeze } from './deep-freeze.js'
import { expandLab } from './expand.js'
import { actionHandler, creatorOf, destroyerOf, labCapabilities, settersOf } from './capabilities.js'
import { perform } from './operations/perform.js'
import { Plan } from './operations/plan.js'
import { operation, type LabEnv } from './operations/run.js'
import { setTag } from './operations/tags.js'
import { snapshotVdi } from './operations/vdi-snapshot.js'
import { createBlankVm, type BlankVm } from './operations/new-vm.js'
import { changeMedia } from './operations/devices.js'
import { createBond, createVlan } from './operations/pool-network.js'
import { installPatches } from './operations/pool-maintenance.js'
import { setVmLimits, type VmLimits } from './operations/vm-limits.js'
import { setOtherConfig } from './operations/other-config.js'
import { patchRecord } from './operations/update.js'
import { loadLabSpec, type LabSpec } from './spec.js'
import type { LabChange, LabStore } from './store.js'
import { LabTable } from './table.js'
import { labUsage } from './usage.js'

export const DEMO_LAB_FILE = join(fixturesDir, 'demo-lab.json')

export interface LabDriverOptions {
  /** id of the user recorded as the creator of the seeded VMs */
  readonly creatorId: string
  readonly clock?: () => number
  /** what to seed an empty lab with (default: fixtures/demo-lab.json) */
  readonly spec?: LabSpec
  /** ms each simulated step of an operation takes (default 400) */
  readonly stepDelay?: number
  /** where the VDI files live (a folder per SR); without it the lab serves no disk content */
  readonly dataDir?: string
}

const DEFAULT_STEP_DELAY = 400

const isDisk = (record: XoRecord | undefined): boolean => record?.type === 'VDI' || record?.type === 'VDI-snapshot'

/**
 * Replaces the whole lab content with `records` in one transaction and marks
 * the lab as seeded, so that a lab emptied later is not seeded again.
 */
export function writeLab(db: Db, records: Iterable<XoRecord>, seededAt: number = Date.now()): void {
  new LabTable(db).replaceAll(records, seededAt)
}

/** A change checked against the current state and ready to persist. */
interface PlannedChange {
  readonly kind: ChangeKind
  readonly id: string
  /** the new frozen record, or for `remove` the last known one */
  readonly object: XoRecord
  readonly previous: XoRecord | undefined
  /** the text to store; undefined for `remove` */
  readonly json: string | undefined
}

/**
 * The local lab: a simulated infrastructure persisted in the embedded store
 * and served from memory. Records are deep-frozen snapshots; a change replaces
 * a record with a new object, so object identity tells whether it changed.
 */
export class LabDriver implements Driver, LabStore {
  readonly capabilities = labCapabilities
  readonly #db: Db
  readonly #options: LabDriverOptions
  #table: LabTable | undefined
  readonly #objects = new Map<string, XoRecord>()
  /** per type, in a stable order: insertion (rowid) order, kept across updates */
  readonly #byType = new Map<string, Map<string, XoRecord>>()
  readonly #listeners = new Set<ChangeListener>()
  readonly #waits = new IndexWaits((id) => this.#objects.get(id))
  readonly #env: LabEnv
  readonly #files: LabDisks | undefined
  readonly disks: LabDiskAccess | undefined

  #closed = false

  constructor(db: Db, options: LabDriverOptions) {
    this.#db = db
    this.#options = options
    const clock = options.clock ?? Date.now
    this.#files =
      options.dataDir === undefined
        ? undefined
        : new LabDisks(options.dataDir, {
            exists: (id) => isDisk(this.#objects.get(id)),
            srExists: (id) => this.#objects.get(id)?.type === 'SR',
            usageChanged: (sr, usage) => this.#applyUsage(sr, usage),
          })
    this.disks = this.#files === undefined ? undefined : new LabDiskAccess(this.#files, this, clock)
    this.#env = { store: this, stepDelay: options.stepDelay ?? DEFAULT_STEP_DELAY, clock, ...(this.#files === undefined ? {} : { disks: this.#files }) }
  }

  /** Brings the lab's tables up to date, seeds an empty lab (records and disk content), loads the records and tidies the disk files. */
  async open(): Promise<void> {
    this.#closed = false
    const table = (this.#table ??= new LabTable(this.#db))
    const seeding = table.needsSeed()
    if (seeding) {
      const now = (this.#options.clock ?? Date.now)()
      const spec = this.#options.spec ?? loadLabSpec(DEMO_LAB_FILE)
      table.replaceAll(expandLab(spec, { creatorId: this.#options.creatorId, now }), now)
    }
    this.#load(table)
    if (this.#files === undefined) return
    // Only the demo lab gets content: a generated lab of thousands of disks stays records until written.
    if (seeding && this.#options.spec === undefined) await seedDiskContent(this.#files, this)
    await this.#files.recover()
  }

  /** Usage figures follow the files on thin SRs; a thick SR's disks keep their reserved sizes. */
  #applyUsage(srId: string, usage: FolderUsage): void {
    const sr = this.#objects.get(srId)
    if (this.#closed || sr?.type !== 'SR' || sr.allocationStrategy === 'thick') return
    const plan = new Plan(this)
    for (const type of ['VDI', 'VDI-snapshot'] as const) {
      for (const disk of this.objectsOfType(type)) {
        if (disk.$SR !== srId) continue
        const own = usage.own.get(disk.id) ?? 0
        const chain = usage.chain.get(disk.id) ?? 0
        if (disk.usage !== own || disk.chainPhysicalUsage !== chain) Object.assign(plan.edit(disk.id, type), { usage: own, chainPhysicalUsage: chain })
      }
    }
    if (sr.physical_usage !== usage.total) plan.edit(srId, 'SR').physical_usage = usage.total
    plan.commit()
  }

  async close(): Promise<void> {
    this.#listeners.clear()
    this.#waits.close(new KeelError('SERVICE_UNAVAILABLE', 'the lab driver closed', { reason: 'closed' }))
    this.#closed = true
    await this.#files?.settle()
  }

  isOpen(): boolean {
    return this.#table !== undefined && !this.#closed
  }

  objectsOfType(type: string): Iterable<XoRecord> {
    const objects = this.#byType.get(type)
    // A fresh iterator per iteration, so the result can be walked more than once.
    return objects === undefined ? [] : { [Symbol.iterator]: () => objects.values() }
  }

  countOfType(type: string): number {
    return this.#byType.get(type)?.size ?? 0
  }

  usage(object: XoRecord, now: number): UsageFigures {
    return labUsage(object, now)
  }

  getObject(id: string): XoRecord | undefined {
    return this.#objects.get(id)
  }

  subscribe(listener: ChangeListener): () => void {
    // Wrapped so that subscribing the same function twice gives two independent subscriptions.
    const entry: ChangeListener = (change) => listener(change)
    this.#listeners.add(entry)
    return () => {
      this.#listeners.delete(entry)
    }
  }

  // The index is the source: a change is in it before its operation resolves.
  async settled(): Promise<void> {}

  waitFor(id: string, options?: WaitForOptions): Promise<XoRecord> {
    return this.#waits.waitFor(id, options)
  }

  async perform(object: XoRecord, action: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created | undefined> {
    const handler = actionHandler(object.type, action)
    if (handler === undefined) throw notDeclared(object, `action ${action}`)
    return perform(operation(this.#env, context), object, handler, params)
  }

  // PATCH and tags take no simulated time: they are metadata, done as soon as stored.
  async update(object: XoRecord, patch: Readonly<Record<string, unknown>>): Promise<void> {
    const setters = settersOf(object.type)
    if (setters === undefined) throw notDeclared(object, 'PATCH')
    this.#commit((plan) => patchRecord(plan, object, setters, patch))
  }

  async destroy(object: XoRecord, context: OperationContext): Promise<void> {
    const destroyer = destroyerOf(object.type)
    if (destroyer === undefined) throw notDeclared(object, 'DELETE')
    await destroyer(operation(this.#env, context), object)
  }

  async create(type: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created> {
    const creator = creatorOf(type)
    if (creator === undefined) throw new KeelError('NO_SUCH_OBJECT', `${type} cannot be created here`, { type, operation: 'POST' })
    const op = operation(this.#env, context)
    const created = await creator(op, params)
    op.progress.set(1)
    return created
  }

  /** One disk's snapshot, outside the REST catalogue (which has none): for the XAPI simulator's VDI.snapshot. */
  async snapshotVdi(object: XoRecord, context: OperationContext): Promise<Created> {
    if (object.type !== 'VDI') throw notDeclared(object, 'snapshot')
    const op = operation(this.#env, context)
    const created = await snapshotVdi(op, object)
    op.progress.set(1)
    return created
  }

  /** A halted VM with no devices from XAPI's VM.create fields, outside the REST catalogue (which creates VMs from templates): for the XAPI simulator. */
  async createBlankVm(pool: XoRecord, fields: BlankVm, context: OperationContext): Promise<Created> {
    if (pool.type !== 'pool') throw notDeclared(pool, 'VM.create')
    const op = operation(this.#env, context)
    const created = await createBlankVm(op, pool.id, fields)
    op.progress.set(1)
    return created
  }

  /** XAPI's pool.create_VLAN_from_PIF: VLAN PIFs onto a network that exists, outside the REST catalogue (whose create_network makes both): for the XAPI simulator. */
  async createVlan(network: XoRecord, pifId: string, vlan: number, context: OperationContext): Promise<void> {
    if (network.type !== 'network') throw notDeclared(network, 'VLAN')
    const op = operation(this.#env, context)
    await createVlan(op, network.id, pifId, vlan)
    op.progress.set(1)
  }

  /** A host's missing patches installed, without its reboot, outside the REST catalogue (whose rolling_update reboots too): for the XAPI simulator's updater plugin. */
  async installPatches(host: XoRecord, context: OperationContext): Promise<void> {
    if (host.type !== 'host') throw notDeclared(host, 'update')
    const op = operation(this.#env, context)
    await installPatches(op, host.id)
    op.progress.set(1)
  }

  /** XAPI's Bond.create: one host's PIFs bonded onto a network that exists, outside the REST catalogue (whose create_bonded_network makes both): for the XAPI simulator. */
  async createBond(network: XoRecord, pifIds: readonly string[], context: OperationContext): Promise<void> {
    if (network.type !== 'network') throw notDeclared(network, 'bond')
    const op = operation(this.#env, context)
    await createBond(op, network.id, pifIds)
    op.progress.set(1)
  }

  /** A disk put into an empty CD drive, or taken out (`vdiId` undefined), outside the REST catalogue: for the XAPI simulator's VBD.insert and VBD.eject. */
  async changeMedia(vbd: XoRecord, vdiId: string | undefined, context: OperationContext): Promise<void> {
    if (vbd.type !== 'VBD') throw notDeclared(vbd, 'media')
    const op = operation(this.#env, context)
    await changeMedia(op, vbd, vdiId)
    op.progress.set(1)
  }

  /** A VM's vCPU and memory limits as XAPI sets them, outside the REST catalogue (whose PATCH sets them together): for the XAPI simulator's VM.set_VCPUs_* and VM.set_memory_*. */
  async setVmLimits(vm: XoRecord, limits: VmLimits): Promise<void> {
    if (vm.type !== 'VM') throw notDeclared(vm, 'limits')
    this.#commit((plan) => setVmLimits(plan, vm.id, limits))
  }

  /** A VM's whole other_config as XAPI sets it, outside the REST catalogue: for the XAPI simulator's VM.*_other_config. */
  async setOtherConfig(vm: XoRecord, other: Readonly<Record<string, string>>): Promise<void> {
    if (!vm.type.startsWith('VM')) throw notDeclared(vm, 'other_config')
    this.#commit((plan) => setOtherConfig(plan, vm.id, other))
  }

  async setTag(object: XoRecord, tag: string, present: boolean): Promise<void> {
    const type = taggableType(object.type)
    if (type === undefined) throw notDeclared(object, 'tags')
    this.#commit((plan) => setTag(plan, object, type, tag, present))
  }

  #commit(build: (plan: Plan) => void): void {
    const plan = new Plan(this)
    build(plan)
    plan.commit()
  }

  /**
   * Applies a batch: checks it (a bad change rejects the whole batch), stores
   * it in one transaction so it is durable before anyone sees it, then swaps
   * the records in memory and tells the listeners, one change at a time.
   * Listeners run synchronously; if some throw, the others still run and an
   * AggregateError is thrown afterwards, the batch being committed anyway.
   */
  applyChanges(changes: readonly LabChange[]): void {
    const planned = this.#plan(changes)
    // A record changing type moves to the end of its new type's order in memory; the table
    // writes it anew so that a restart loads the same order.
    this.#opened().write(
      planned.map(({ id, object, previous, json }) => ({
        id,
        type: object.type,
        json,
        retyped: previous !== undefined && previous.type !== object.type,
      })),
    )
    for (const change of planned) {
      if (change.kind === 'remove') this.#unindex(change.object)
      else this.#index(change.object, change.previous)
    }
    for (const change of planned) this.#waits.changed(change.id)
    // A removed disk's file goes after its record: a crash in between leaves a file the next start collects.
    // Not when its SR goes in the same batch: a forgotten SR keeps its files, a destroyed one loses its whole folder.
    const srsGone = new Set(planned.filter((change) => change.kind === 'remove' && change.object.type === 'SR').map((change) => change.id))
    for (const change of planned) {
      if (change.kind !== 'remove' || !isDisk(change.object) || typeof change.object.$SR !== 'string' || srsGone.has(change.object.$SR)) continue
      this.#files?.remove({ id: change.id, sr: change.object.$SR }).catch(() => {})
    }
    const errors: unknown[] = []
    for (const { kind, object, previous } of planned) {
      const event: ObjectChange = previous === undefined ? { kind, object } : { kind, object, previous }
      for (const listener of this.#listeners) {
        try {
          listener(event)
        } catch (error) {
          errors.push(error)
        }
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `${errors.length} change listener call(s) failed`)
  }

  #plan(changes: readonly LabChange[]): PlannedChange[] {
    // Each change is checked against the state the previous ones in the batch leave.
    const staged = new Map<string, XoRecord | null>()
    return changes.map(({ kind, object }) => {
      const { id } = object
      const stagedState = staged.get(id)
      const current = stagedState === undefined ? this.#objects.get(id) : (stagedState ?? undefined)
      if (kind === 'remove') {
        if (current === undefined) throw noSuchObject(id, object.type)
        staged.set(id, null)
        return { kind, id, object: current, previous: current, json: undefined }
      }
      if (kind === 'add' && current !== undefined) throw alreadyExists(object.type, 'id', id)
      if (kind === 'update' && current === undefined) throw noSuchObject(id, object.type)
      // Stored and served from the same text, so memory always holds exactly what a restart would load.
      const json = JSON.stringify(object)
      const record = deepFreeze(JSON.parse(json) as XoRecord)
      staged.set(id, record)
      return { kind, id, object: record, previous: current, json }
    })
  }

  #opened(): LabTable {
    if (this.#table === undefined) throw new Error('the lab driver is used before open()')
    return this.#table
  }

  #load(table: LabTable): void {
    this.#objects.clear()
    this.#byType.clear()
    for (const data of table.texts()) this.#index(deepFreeze(JSON.parse(data) as XoRecord), undefined)
  }

  #index(record: XoRecord, previous: XoRecord | undefined): void {
    if (previous !== undefined && previous.type !== record.type) this.#unindex(previous)
    this.#objects.set(record.id, record)
    let ofType = this.#byType.get(record.type)
    if (ofType === undefined) this.#byType.set(record.type, (ofType = new Map()))
    ofType.set(record.id, record)
  }

  #unindex(record: XoRecord): void {
    this.#objects.delete(record.id)
    this.#byType.get(record.type)?.delete(record.id)
  }
}
