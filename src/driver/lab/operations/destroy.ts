import type { XoRecord } from '../../types.js'
import { removeDevice } from './devices.js'
import type { LabType, Plan } from './plan.js'
import { runTransition, transit, transitionSteps } from './power.js'
import { removeDisk, removeNetwork, removeVm, removeTemplate, removeVmSnapshot } from './removal.js'
import { preview, Run, type Operation } from './run.js'
import { destroySr } from './sr-lifecycle.js'

/** DELETE of one type. */
export type Destroyer = (op: Operation, object: XoRecord) => Promise<void>

/** A VM that is not halted is powered off first (a visible step), then removed in one step. */
const destroyVm: Destroyer = async (op, object) => {
  const live = preview(op.env, (plan) => {
    const running = plan.get(object.id, 'VM').power_state !== 'Halted'
    if (running) transit(plan, object.id, 'hard_shutdown', {}, op.env.clock())
    removeVm(plan, object.id)
    return running
  })
  const run = new Run(op, (live ? transitionSteps('hard_shutdown') : 0) + 1)
  if (live) await runTransition(run, op.env.clock, object.id, 'hard_shutdown')
  await run.apply((plan) => removeVm(plan, object.id))
}

const removal =
  (remove: (plan: Plan, id: string) => void): Destroyer =>
  async (op, object) => {
    preview(op.env, (plan) => remove(plan, object.id))
    await new Run(op, 1).apply((plan) => remove(plan, object.id))
  }

/** The lab's DELETE, by type. */
export const destroyers = {
  VM: destroyVm,
  'VM-snapshot': removal(removeVmSnapshot),
  'VM-template': removal(removeTemplate),
  VDI: removal(removeDisk),
  'VDI-snapshot': removal(removeDisk),
  network: removal(removeNetwork),
  VBD: removal(removeDevice('VBD')),
  VIF: removal(removeDevice('VIF')),
  SR: destroySr,
} as const satisfies Partial<Record<LabType, Destroyer>>
