import { defaultOf, xapiClass, type XapiClass } from '../xapi/datamodel/index.js'
import type { XmlRpcStruct, XmlRpcValue } from '../xapi/xml-rpc.js'
import { handleInvalid, uuidInvalid } from './failures.js'

/** A complete XAPI record: every field of its class, in the datamodel's order. */
export type XapiRecord = XmlRpcStruct

export interface StoredObject {
  readonly cls: string
  readonly ref: string
  readonly uuid: string
  readonly record: XapiRecord
}

export type EventOperation = 'add' | 'mod' | 'del'

export interface XapiEvent {
  /** the database generation this change made; event.from tokens count these */
  readonly id: number
  readonly cls: string
  readonly operation: EventOperation
  readonly ref: string
  readonly uuid: string
  /** the record after the change (before it, for `del`) */
  readonly snapshot: XapiRecord
  readonly timestamp: Date
}

export interface DatabaseOptions {
  /** changes kept for event.from; a token older than these answers EVENTS_LOST */
  readonly eventLogSize?: number
  readonly clock?: () => number
}

function classOf(name: string): XapiClass {
  const cls = xapiClass(name)
  if (cls === undefined) throw new Error(`the simulator does not serve class ${name}`)
  return cls
}

// Dates and doubles compared by value: two records are the same when their wire text is.
const comparable = (record: XapiRecord): string => JSON.stringify(record, (_key, value: unknown) => (value instanceof Date ? value.getTime() : value))

/**
 * The simulator's objects by ref, and the ordered log of their changes that
 * event.from reads. Records are complete (every datamodel field, defaults
 * filled) and frozen; a change replaces the record.
 */
export class XapiDatabase {
  readonly #objects = new Map<string, StoredObject>()
  /** each record's comparable text, made on its first comparison: loading a large lab compares nothing */
  readonly #texts = new WeakMap<XapiRecord, string>()
  readonly #byClass = new Map<string, Map<string, StoredObject>>()
  readonly #byUuid = new Map<string, Map<string, string>>()
  readonly #log: XapiEvent[] = []
  readonly #logSize: number
  readonly #clock: () => number
  readonly #listeners = new Set<() => void>()
  #generation = 0

  constructor(options: DatabaseOptions = {}) {
    this.#logSize = options.eventLogSize ?? 100_000
    this.#clock = options.clock ?? Date.now
  }

  get generation(): number {
    return this.#generation
  }

  /** The oldest generation whose change is still in the log (generation + 1 when the log is empty). */
  get oldestLogged(): number {
    return this.#log[0]?.id ?? this.#generation + 1
  }

  /** Stores a record built from `fields` and the class defaults; logs add or mod, or nothing when it did not change. */
  put(cls: string, ref: string, uuid: string, fields: Readonly<Record<string, XmlRpcValue>>): StoredObject {
    const definition = classOf(cls)
    const record: Record<string, XmlRpcValue> = {}
    for (const [name, field] of definition.fields) record[name] = fields[name] ?? defaultOf(field)
    Object.freeze(record)
    const previous = this.#objects.get(ref)
    if (previous !== undefined && this.#text(previous.record) === this.#text(record)) return previous
    if (previous !== undefined && previous.cls !== cls) throw new Error(`${ref} is a ${previous.cls}, not a ${cls}`)
    const stored = { cls, ref, uuid, record }
    this.#objects.set(ref, stored)
    let ofClass = this.#byClass.get(cls)
    if (ofClass === undefined) this.#byClass.set(cls, (ofClass = new Map()))
    ofClass.set(ref, stored)
    let uuids = this.#byUuid.get(cls)
    if (uuids === undefined) this.#byUuid.set(cls, (uuids = new Map()))
    if (previous !== undefined && previous.uuid !== uuid) uuids.delete(previous.uuid)
    uuids.set(uuid, ref)
    this.#append(cls, previous === undefined ? 'add' : 'mod', ref, uuid, record)
    return stored
  }

  remove(ref: string): void {
    const stored = this.#objects.get(ref)
    if (stored === undefined) return
    this.#objects.delete(ref)
    this.#byClass.get(stored.cls)?.delete(ref)
    this.#byUuid.get(stored.cls)?.delete(stored.uuid)
    this.#append(stored.cls, 'del', ref, stored.uuid, stored.record)
  }

  get(ref: string): StoredObject | undefined {
    return this.#objects.get(ref)
  }

  /** The object `ref` of class `cls`, or HANDLE_INVALID as XAPI answers a ref it does not know. */
  expect(cls: string, ref: string): StoredObject {
    const stored = this.#objects.get(ref)
    if (stored === undefined || stored.cls !== cls) throw handleInvalid(cls, ref)
    return stored
  }

  byUuid(cls: string, uuid: string): StoredObject {
    const ref = this.#byUuid.get(cls)?.get(uuid)
    const stored = ref === undefined ? undefined : this.#objects.get(ref)
    if (stored === undefined) throw uuidInvalid(cls, uuid)
    return stored
  }

  ofClass(cls: string): Iterable<StoredObject> {
    return this.#byClass.get(cls)?.values() ?? []
  }

  countOfClass(cls: string): number {
    return this.#byClass.get(cls)?.size ?? 0
  }

  /** Changes after generation `after`, oldest first, at most `limit`. */
  eventsAfter(after: number, limit: number): XapiEvent[] {
    const first = this.#log[0]
    if (first === undefined) return []
    const start = Math.max(0, after + 1 - first.id)
    return this.#log.slice(start, start + limit)
  }

  /** Logs a change nobody made to a record (event.inject): a `mod` of it as it is. */
  touch(cls: string, ref: string): number {
    const stored = this.expect(cls, ref)
    this.#append(cls, 'mod', ref, stored.uuid, stored.record)
    return this.#generation
  }

  /** Drops every logged change (fault injection): tokens older than now answer EVENTS_LOST. */
  forgetLog(): void {
    this.#log.length = 0
  }

  /** Calls `listener` after each logged change until the returned function is called. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #text(record: XapiRecord): string {
    let text = this.#texts.get(record)
    if (text === undefined) this.#texts.set(record, (text = comparable(record)))
    return text
  }

  #append(cls: string, operation: EventOperation, ref: string, uuid: string, snapshot: XapiRecord): void {
    const id = ++this.#generation
    this.#log.push({ id, cls, operation, ref, uuid, snapshot, timestamp: new Date(this.#clock()) })
    // Trimmed in batches, so a steady stream of changes costs no shift per change.
    if (this.#log.length > this.#logSize * 1.25) this.#log.splice(0, this.#log.length - this.#logSize)
    for (const listener of this.#listeners) listener()
  }
}
