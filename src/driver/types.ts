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

/** Live figures a real pool reads from its statistics (the lab simulates them). */
export interface UsageFigures {
  /** CPU use, 0 to 1 of the object's CPUs */
  readonly cpu: number
  /** bytes of memory in use, for objects that have memory */
  readonly memory?: number
}

export interface Driver extends DriverOperations {
  /** Loads (and on first start seeds) the object index. */
  open(): Promise<void>
  close(): Promise<void>
  /** Every object of one XO type (`VM`, `host`, ...), in a stable order. */
  objectsOfType(type: string): Iterable<XoRecord>
  /** Counts objects of one type without materialising them. */
  countOfType(type: string): number
  /** One object by id, whatever its type. */
  getObject(id: string): XoRecord | undefined
  /** Current usage of a host or VM at `now` (ms). */
  usage(object: XoRecord, now: number): UsageFigures
  /** Subscribes to every change; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void
}

/** What a long operation may use while it runs. */
export interface OperationContext {
  /** aborted when the task is asked to stop; long operations check it and end with an abort error */
  readonly signal: AbortSignal
  /** the acting user's id (recorded on created objects) */
  readonly userId: string
  /** reports completion, 0 to 100 */
  progress(percent: number): void
}

/** The object an operation created, for `201 {id}` and `Location`. */
export interface Created {
  readonly id: string
  readonly type: string
}

/**
 * The operations a driver carries out. Names and parameters are the REST
 * API's own (src/model/operations.ts), already validated against their
 * schemas, with every referenced object checked to exist. Semantic failures
 * are KeelErrors (INCORRECT_STATE with `{actual, expected}`, INVALID_PARAMETERS,
 * NO_SUCH_OBJECT, ABORTED). Every change is durable before the promise settles.
 */
export interface DriverOperations {
  perform(object: XoRecord, action: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created | undefined>
  /** applies all fields or none */
  update(object: XoRecord, patch: Readonly<Record<string, unknown>>): Promise<void>
  destroy(object: XoRecord, context: OperationContext): Promise<void>
  setTag(object: XoRecord, tag: string, present: boolean): Promise<void>
}
