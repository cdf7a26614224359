import type { Created, XoRecord } from '../../types.js'
import { vbdActions, vifActions } from './devices.js'
import { hostActions } from './host.js'
import { hostMaintenanceActions } from './host-maintenance.js'
import { hostMembershipActions } from './host-membership.js'
import type { ActionHandler, Params } from './params.js'
import type { LabType } from './plan.js'
import { poolActions } from './pool.js'
import { powerActions } from './power.js'
import type { Operation } from './run.js'
import { snapshotActions } from './snapshot.js'
import { srActions, vdiActions } from './storage.js'
import { pbdActions, srLifecycleActions } from './sr-lifecycle.js'

/** The lab's implementation of each action of src/model/operations.ts, by type then name. */
export const actionHandlers = {
  VM: { ...powerActions, ...snapshotActions },
  host: { ...hostActions, ...hostMaintenanceActions, ...hostMembershipActions },
  pool: poolActions,
  SR: { ...srActions, ...srLifecycleActions },
  PBD: pbdActions,
  VDI: vdiActions,
  VBD: vbdActions,
  VIF: vifActions,
} as const satisfies Partial<Record<LabType, Readonly<Record<string, ActionHandler>>>>

/** Runs one action (found through lab/capabilities.ts) and completes its progress. */
export async function perform(op: Operation, object: XoRecord, handler: ActionHandler, params: Params): Promise<Created | undefined> {
  const created = await handler(op, object, params)
  op.progress.set(1)
  return created
}
