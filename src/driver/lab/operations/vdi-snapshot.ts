import { randomUUID } from 'node:crypto'
import { incorrectState } from '../../../errors.js'
import type { Created, XoRecord } from '../../types.js'
import { addVdiSnapshot } from './builders.js'
import { seconds } from './guest.js'
import type { Plan } from './plan.js'
import { preview, Run, type Operation } from './run.js'
import { freeSpace, isThick } from './sr-usage.js'

/**
 * Steps before the snapshot shows, as a VM snapshot's disks take: the
 * content is forked (constant time), the record committed after.
 */
const WAITS = 2

function snapshotDisk(plan: Plan, vdiId: string, now: number, id?: string): string {
  const vdi = plan.get(vdiId, 'VDI')
  const sr = plan.get(vdi.$SR, 'SR')
  // A thick SR reserves a full-size volume for the snapshot, as for a VM's.
  if (isThick(sr) && freeSpace(sr) < vdi.size) throw incorrectState({ actual: freeSpace(sr), expected: vdi.size, object: sr.id, property: 'free space' })
  return addVdiSnapshot(plan, vdiId, seconds(now), id).id
}

/**
 * One disk's snapshot on its own (XAPI's VDI.snapshot), made as a VM
 * snapshot makes each of its disks': a VDI-snapshot record whose content is
 * forked from the disk's before the record is committed, so it never shows
 * without its content. The REST API has no such action (the reference
 * snapshots disks only with their VM): the XAPI simulator calls it directly.
 */
export async function snapshotVdi(op: Operation, object: XoRecord): Promise<Created> {
  const vdi = preview(op.env, (plan) => {
    snapshotDisk(plan, object.id, op.env.clock())
    return plan.get(object.id, 'VDI')
  })
  const id = randomUUID()
  const run = new Run(op, WAITS + 1)
  await run.wait(WAITS)
  const disks = op.env.disks
  if (disks === undefined) return { id: await run.apply((plan) => snapshotDisk(plan, object.id, op.env.clock(), id)), type: 'VDI-snapshot' }
  const release = await disks.fork({ id: vdi.id, sr: vdi.$SR }, [id], vdi.size)
  try {
    return { id: await run.apply((plan) => snapshotDisk(plan, object.id, op.env.clock(), id)), type: 'VDI-snapshot' }
  } catch (error) {
    await disks.remove({ id, sr: vdi.$SR })
    throw error
  } finally {
    release()
  }
}
