import type { XoRecord } from '../../types.js'
import type { Plan } from './plan.js'
import { runTransition, transit, transitionSteps } from './power.js'
import { removeDisk, removeNetwork, removeVm, removeVmSnapshot } from './removal.js'
import { preview, Run, type Operation } from './run.js'

const removers: Readonly<Record<string, (plan: Plan, id: string) => void>> = {
  'VM-snapshot': removeVmSnapshot,
  VDI: removeDisk,
  'VDI-snapshot': removeDisk,
  network: removeNetwork,
}

/** DELETE: a VM that is not halted is powered off first (a visible step), then removed in one step. */
export async function destroy(op: Operation, object: XoRecord): Promise<void> {
  if (object.type === 'VM') {
    const live = preview(op.env, (plan) => {
      const running = plan.get(object.id, 'VM').power_state !== 'Halted'
      if (running) transit(plan, object.id, 'hard_shutdown', {}, op.env.clock())
      removeVm(plan, object.id)
      return running
    })
    const run = new Run(op, (live ? transitionSteps('hard_shutdown') : 0) + 1)
    if (live) await runTransition(run, op.env.clock, object.id, 'hard_shutdown')
    await run.apply((plan) => removeVm(plan, object.id))
    return
  }
  const remove = removers[object.type]
  if (remove === undefined) throw new Error(`the lab cannot destroy a ${object.type}`)
  preview(op.env, (plan) => remove(plan, object.id))
  await new Run(op, 1).apply((plan) => remove(plan, object.id))
}
