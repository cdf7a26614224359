import type { SrRecord } from '../../../model/records.js'
import { addToList, removeFromList } from './lists.js'
import type { Frozen, Plan } from './plan.js'

/** Thick SRs (LVM) allocate a disk's whole size up front; the others only what it holds. */
export const isThick = (sr: Frozen<SrRecord>): boolean => sr.allocationStrategy === 'thick'

/** Bytes still free on the SR's storage. */
export const freeSpace = (sr: Frozen<SrRecord>): number =>
  sr.size === null ? Number.POSITIVE_INFINITY : sr.size - (sr.physical_usage ?? 0)

interface Disk {
  readonly id: string
  readonly $SR: string
  readonly size: number
  readonly usage: number
}

/** Adds a disk to its SR's list and figures (`sign` 1) or takes it out (-1). */
export function accountDisk(plan: Plan, disk: Disk, sign: 1 | -1): void {
  const sr = plan.edit(disk.$SR, 'SR')
  if (sign > 0) addToList(sr.VDIs, disk.id)
  else removeFromList(sr.VDIs, disk.id)
  sr.usage += sign * disk.size
  if (sr.physical_usage !== null) sr.physical_usage += sign * disk.usage
}
