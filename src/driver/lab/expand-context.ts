import type { XoRecord } from '../types.js'
import type {
  HostRecord,
  NetworkRecord,
  PoolRecord,
  SrRecord,
  VdiRecord,
  VmRecord,
  VmTemplateRecord,
} from '../../model/records.js'
import type { OsProfile, SrDriverProfile } from './catalog.js'
import { LabRandom } from './random.js'
import { recordBase, type RecordBase } from './record-defaults.js'
import type { HostSpec, NetworkSpec, SrSpec, TemplateSpec } from './spec.js'

export interface ExpandOptions {
  /** id of the user recorded as the creator of every VM */
  readonly creatorId: string
  /** ms since the epoch; ages in the spec count back from it */
  readonly now: number
  readonly seed?: number
}

export const DEFAULT_SEED = 1

/** State shared by the whole expansion: randomness, clock and the output. */
export class ExpandContext {
  readonly random: LabRandom
  readonly now: number
  readonly creatorId: string
  readonly records: XoRecord[] = []
  readonly #ids = new Set<string>()

  constructor(options: ExpandOptions) {
    this.random = new LabRandom(options.seed ?? DEFAULT_SEED)
    this.now = options.now
    this.creatorId = options.creatorId
  }

  /** `now` minus `ms`, in whole seconds as XAPI-derived times are. */
  secondsAgo(ms: number): number {
    return Math.floor((this.now - ms) / 1000)
  }

  base(key: string, poolId: string, id?: string): RecordBase {
    return recordBase(this.random.uuid(key), poolId, id)
  }

  /** Adds a record; records are mutable until expansion ends, links are filled in as children appear. */
  add<T extends XoRecord>(record: T): T {
    if (this.#ids.has(record.id)) throw new Error(`lab spec yields two objects with id ${record.id} (duplicate names?)`)
    this.#ids.add(record.id)
    this.records.push(record)
    return record
  }
}

export interface HostEntry {
  readonly spec: HostSpec
  readonly record: HostRecord
}

export interface NetworkEntry {
  readonly spec: NetworkSpec
  readonly record: NetworkRecord
  /** network address as an unsigned 32-bit integer */
  readonly base: number
  readonly prefix: number
  /** host part of the next guest address */
  nextHost: number
}

export interface SrEntry {
  readonly spec: SrSpec
  readonly record: SrRecord
  readonly driver: SrDriverProfile
  /** the host of a local SR */
  readonly host: HostEntry | undefined
}

export interface TemplateEntry {
  readonly spec: TemplateSpec
  readonly record: VmTemplateRecord
  readonly os: OsProfile
}

/** Everything named in one pool, for resolving the spec's references. */
export class PoolScope {
  readonly hosts = new Map<string, HostEntry>()
  readonly networks = new Map<string, NetworkEntry>()
  readonly srs = new Map<string, SrEntry>()
  readonly isos = new Map<string, VdiRecord>()
  readonly templates = new Map<string, TemplateEntry>()
  /** VMs by name, for messages */
  readonly vms = new Map<string, VmRecord>()

  constructor(
    readonly name: string,
    readonly record: PoolRecord,
  ) {}

  get id(): string {
    return this.record.id
  }

  /** Looks `name` up in one of the maps, failing with a message that says where the reference was. */
  resolve<T>(map: ReadonlyMap<string, T>, kind: string, name: string, where: string): T {
    const entry = map.get(name)
    if (entry === undefined) throw new Error(`pool "${this.name}": unknown ${kind} "${name}" in ${where}`)
    return entry
  }
}
