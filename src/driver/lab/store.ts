import type { ChangeKind, XoRecord } from '../types.js'

/** One change of a batch the lab applies. */
export interface LabChange {
  readonly kind: ChangeKind
  /** the new record; for `remove`, only its id counts */
  readonly object: XoRecord
}

/** What operations need of the lab: reading the current records and committing a batch. */
export interface LabStore {
  getObject(id: string): XoRecord | undefined
  objectsOfType(type: string): Iterable<XoRecord>
  /** checks the batch, stores it durably, then publishes it; a bad change rejects the whole batch */
  applyChanges(changes: readonly LabChange[]): void
}
