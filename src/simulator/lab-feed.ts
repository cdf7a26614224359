import type { Driver, ObjectChange, XoRecord } from '../driver/types.js'
import { NULL_REF } from '../xapi/datamodel/index.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import type { XapiDatabase } from './database.js'
import { MAPPED_TYPES, xapiObjects, type RecordContext } from './records/index.js'

/**
 * Keeps the XAPI database equal to the lab: every lab record becomes its XAPI
 * objects (refs are the lab's `_xapiRef`s, so a ref never changes), and each
 * lab change rewrites the objects of the record that changed. The lab keeps
 * both ends of every link in its records (VM.$VBDs and VBD.VM), so rewriting
 * only the changed records keeps the cross-references consistent both ways.
 *
 * Fields the lab does not model (a VM's HVM_boot_params set through XAPI) are
 * kept in an overlay laid over the lab's values, in memory only.
 */
export class LabFeed {
  readonly #driver: Driver
  readonly #db: XapiDatabase
  readonly #overlay = new Map<string, Record<string, XmlRpcValue>>()
  /** the lab record behind each ref, dependents (metrics) included */
  readonly #labIds = new Map<string, string>()
  readonly #context: RecordContext
  #unsubscribe: (() => void) | undefined

  constructor(driver: Driver, db: XapiDatabase) {
    this.#driver = driver
    this.#db = db
    this.#context = {
      object: (id) => (typeof id === 'string' && id !== '' ? driver.getObject(id) : undefined),
      ref: (id) => {
        const object = typeof id === 'string' && id !== '' ? driver.getObject(id) : undefined
        return typeof object?.['_xapiRef'] === 'string' ? object['_xapiRef'] : NULL_REF
      },
    }
  }

  /** Loads every lab record, then follows the lab's changes. */
  start(): void {
    for (const type of MAPPED_TYPES) for (const record of this.#driver.objectsOfType(type)) this.#apply(record)
    this.#unsubscribe = this.#driver.subscribe((change) => this.#onChange(change))
  }

  stop(): void {
    this.#unsubscribe?.()
    this.#unsubscribe = undefined
  }

  /** The lab record a ref stands for (a VM for its VM_metrics too). */
  labRecord(ref: string): XoRecord | undefined {
    const id = this.#labIds.get(ref)
    return id === undefined ? undefined : this.#driver.getObject(id)
  }

  /** Sets fields the lab does not model, and rewrites the object with them. */
  overlay(ref: string, fields: Readonly<Record<string, XmlRpcValue>>): void {
    this.#overlay.set(ref, { ...this.#overlay.get(ref), ...fields })
    const record = this.labRecord(ref)
    if (record !== undefined) this.#apply(record)
  }

  #onChange(change: ObjectChange): void {
    if (change.kind !== 'remove') {
      this.#apply(change.object)
      return
    }
    for (const object of xapiObjects(change.object, this.#context)) {
      this.#db.remove(object.ref)
      this.#overlay.delete(object.ref)
      this.#labIds.delete(object.ref)
    }
  }

  #apply(record: XoRecord): void {
    for (const object of xapiObjects(record, this.#context)) {
      this.#labIds.set(object.ref, record.id)
      const overlay = this.#overlay.get(object.ref)
      this.#db.put(object.cls, object.ref, object.uuid, overlay === undefined ? object.fields : { ...object.fields, ...overlay })
    }
  }
}
