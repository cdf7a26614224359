import type { Created, XoRecord } from '../../types.js'
import { hostActions } from './host.js'
import type { ActionHandler, Params } from './params.js'
import { poolActions } from './pool.js'
import { powerActions } from './power.js'
import type { Operation } from './run.js'
import { snapshotActions } from './snapshot.js'
import { srActions, vdiActions } from './storage.js'

/** The lab's implementation of each action of src/model/operations.ts, by type then name. */
const handlers: Readonly<Record<string, Readonly<Record<string, ActionHandler>>>> = {
  VM: { ...powerActions, ...snapshotActions },
  host: hostActions,
  pool: poolActions,
  SR: srActions,
  VDI: vdiActions,
}

export async function perform(op: Operation, object: XoRecord, action: string, params: Params): Promise<Created | undefined> {
  const ofType = handlers[object.type]
  const handler = ofType !== undefined && Object.hasOwn(ofType, action) ? ofType[action] : undefined
  if (handler === undefined) throw new Error(`the lab has no action ${action} on ${object.type}`)
  const created = await handler(op, object, params)
  op.progress.set(1)
  return created
}
