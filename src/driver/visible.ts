import type { Created, Driver, XoRecord } from './types.js'

/** What callers need to read their own writes. */
export type DriverIndex = Pick<Driver, 'settled' | 'getObject'>

/**
 * Runs a change, then waits until the index shows what it committed, so that
 * whoever is answered next reads it. A failed change is waited for too (it
 * may have committed some steps); its own error is the one reported.
 */
export async function visibly<T>(index: DriverIndex, change: () => Promise<T>): Promise<T> {
  let result: T
  try {
    result = await change()
  } catch (error) {
    await index.settled().catch(() => undefined)
    throw error
  }
  await index.settled()
  return result
}

/** The record of what a change created, with every change committed beside it (its disks, its devices) in the index. */
export async function createdRecord(index: DriverIndex, created: Created): Promise<XoRecord> {
  await index.settled()
  const record = index.getObject(created.id)
  if (record === undefined) throw new Error(`the ${created.type} ${created.id} just created is gone`)
  return record
}
