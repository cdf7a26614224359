import { noSuchObject } from '../../../errors.js'
import type {
  GpuGroupRecord,
  HostRecord,
  MessageRecord,
  NetworkRecord,
  PbdRecord,
  PifRecord,
  PoolRecord,
  SmRecord,
  SrRecord,
  VbdRecord,
  VdiRecord,
  VdiSnapshotRecord,
  VifRecord,
  VmControllerRecord,
  VmRecord,
  VmSnapshotRecord,
  VmTemplateRecord,
} from '../../../model/records.js'
import type { XoRecord } from '../../types.js'
import type { LabChange, LabStore } from '../store.js'

/** The record shape of each type operations touch. */
interface RecordTypes {
  VM: VmRecord
  'VM-snapshot': VmSnapshotRecord
  'VM-template': VmTemplateRecord
  'VM-controller': VmControllerRecord
  host: HostRecord
  pool: PoolRecord
  SR: SrRecord
  VDI: VdiRecord
  'VDI-snapshot': VdiSnapshotRecord
  VBD: VbdRecord
  VIF: VifRecord
  PIF: PifRecord
  PBD: PbdRecord
  network: NetworkRecord
  message: MessageRecord
  SM: SmRecord
  gpuGroup: GpuGroupRecord
}
export type LabType = keyof RecordTypes

/** A stored record as the lab serves it: deep-frozen, so only read it. */
export type Frozen<T> = T extends readonly (infer U)[]
  ? readonly Frozen<U>[]
  : T extends object
    ? { readonly [K in keyof T]: Frozen<T[K]> }
    : T

interface Staged {
  /** the record as it will be stored */
  readonly record: XoRecord
  /** the stored record it replaces; undefined for an addition */
  readonly original: XoRecord | undefined
  readonly removed: boolean
}

/**
 * A set of record changes worked out against the current state and committed
 * as one batch. Reads see the plan's own changes, so a step can be written as
 * a sequence of small edits; nothing is visible until `commit`, and a plan
 * that throws half-way is simply dropped.
 */
export class Plan {
  readonly #store: LabStore
  readonly #staged = new Map<string, Staged>()

  constructor(store: LabStore) {
    this.#store = store
  }

  /** The record as this plan leaves it, if it exists. */
  find(id: string): XoRecord | undefined {
    const staged = this.#staged.get(id)
    if (staged !== undefined) return staged.removed ? undefined : staged.record
    return this.#store.getObject(id)
  }

  /** A record of one of `types`, for reading; a missing one is a NO_SUCH_OBJECT for the first type. */
  get<K extends LabType>(id: string, ...types: [K, ...K[]]): Frozen<RecordTypes[K]> {
    return this.#typed(id, types, this.find(id)) as Frozen<RecordTypes[K]>
  }

  /** A record of one of `types`, for changing: the plan keeps a private copy. */
  edit<K extends LabType>(id: string, ...types: [K, ...K[]]): RecordTypes[K] {
    const record = this.#typed(id, types, this.find(id))
    const staged = this.#staged.get(id)
    if (staged !== undefined) return staged.record as RecordTypes[K]
    const copy = structuredClone(record) as XoRecord
    this.#staged.set(id, { record: copy, original: record, removed: false })
    return copy as RecordTypes[K]
  }

  /** Every record of a type as this plan leaves them, in the lab's order then the plan's additions. */
  all<K extends LabType>(type: K): Array<Frozen<RecordTypes[K]>> {
    const records: XoRecord[] = []
    for (const stored of this.#store.objectsOfType(type)) {
      const staged = this.#staged.get(stored.id)
      if (staged === undefined) records.push(stored)
      else if (!staged.removed && staged.record.type === type) records.push(staged.record)
    }
    for (const { record, original } of this.#staged.values()) {
      if (original === undefined && record.type === type) records.push(record)
    }
    return records as Array<Frozen<RecordTypes[K]>>
  }

  add<T extends XoRecord>(record: T): T {
    if (this.find(record.id) !== undefined) throw new Error(`the plan adds ${record.type} ${record.id} twice`)
    this.#staged.set(record.id, { record, original: undefined, removed: false })
    return record
  }

  remove(id: string, ...types: [LabType, ...LabType[]]): void {
    const record = this.#typed(id, types, this.find(id))
    const staged = this.#staged.get(id)
    const original = staged === undefined ? record : staged.original
    // An object added and removed by the same plan never existed for anyone else.
    if (original === undefined) this.#staged.delete(id)
    else this.#staged.set(id, { record: original, original, removed: true })
  }

  /** The batch for LabDriver.applyChanges; records left as they were are not in it. */
  changes(): LabChange[] {
    const changes: LabChange[] = []
    for (const { record, original, removed } of this.#staged.values()) {
      if (removed) changes.push({ kind: 'remove', object: record })
      else if (original === undefined) changes.push({ kind: 'add', object: record })
      else if (JSON.stringify(record) !== JSON.stringify(original)) changes.push({ kind: 'update', object: record })
    }
    return changes
  }

  /** Applies the plan as one durable batch; returns how many records changed. */
  commit(): number {
    const changes = this.changes()
    if (changes.length > 0) this.#store.applyChanges(changes)
    return changes.length
  }

  #typed(id: string, types: readonly string[], record: XoRecord | undefined): XoRecord {
    if (record === undefined || !types.includes(record.type)) throw noSuchObject(id, types[0] ?? 'object')
    return record
  }
}
