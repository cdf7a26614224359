/**
 * The boundary between Keel and the infrastructure it manages. The REST layer
 * sees only this interface; the local lab implements it today and a driver for
 * real hypervisor pools will implement it later.
 */

/** An infrastructure object as the REST API serves it (XO record shape). */
export interface XoRecord {
  readonly id: string
  readonly type: string
  readonly [field: string]: unknown
}

export type ChangeKind = 'add' | 'update' | 'remove'

export interface ObjectChange {
  readonly kind: ChangeKind
  /** the new record, or for `remove` the last known record */
  readonly object: XoRecord
  readonly previous?: XoRecord
}

export type ChangeListener = (change: ObjectChange) => void

export interface Driver {
  /** Loads (and on first start seeds) the object index. */
  open(): Promise<void>
  close(): Promise<void>
  /** Every object of one XO type (`VM`, `host`, ...), in a stable order. */
  objectsOfType(type: string): Iterable<XoRecord>
  /** Counts objects of one type without materialising them. */
  countOfType(type: string): number
  /** One object by id, whatever its type. */
  getObject(id: string): XoRecord | undefined
  /** Subscribes to every change; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void
}
