import type { VmPowerState, VmRecord } from '../../../model/records.js'
import { move, powerOff, powerOn, reboot, requirePowerState, setPaused, suspend } from './guest.js'
import { optionalString, requiredString, type ActionHandler, type Params } from './params.js'
import { checkChosenHost, chooseHost } from './placement.js'
import type { Frozen, Plan } from './plan.js'
import { preview, Run } from './run.js'

/**
 * VM power actions, with the states XAPI allows each from. A VM's power
 * state changes in one visible step at the end; the steps before it are the
 * time the hypervisor takes.
 */
interface Transition {
  readonly from: readonly VmPowerState[]
  /** steps that pass before the change shows */
  readonly waits: number
  readonly change: (plan: Plan, vm: Frozen<VmRecord>, params: Params, now: number) => void
}

const transitions = {
  start: {
    from: ['Halted'],
    waits: 4,
    change: (plan, vm, params, now) => {
      const hostId = optionalString(params, 'hostId')
      const host = hostId === undefined ? chooseHost(plan, vm) : checkChosenHost(plan, vm, hostId, false)
      powerOn(plan, vm.id, host.id, now)
    },
  },
  clean_shutdown: { from: ['Running'], waits: 3, change: (plan, vm) => powerOff(plan, vm.id) },
  hard_shutdown: { from: ['Running', 'Paused', 'Suspended'], waits: 1, change: (plan, vm) => powerOff(plan, vm.id) },
  clean_reboot: { from: ['Running'], waits: 4, change: (plan, vm, _, now) => reboot(plan, vm.id, now) },
  hard_reboot: { from: ['Running', 'Paused'], waits: 2, change: (plan, vm, _, now) => reboot(plan, vm.id, now) },
  pause: { from: ['Running'], waits: 0, change: (plan, vm) => setPaused(plan, vm.id, true) },
  unpause: { from: ['Paused'], waits: 0, change: (plan, vm) => setPaused(plan, vm.id, false) },
  suspend: { from: ['Running'], waits: 3, change: (plan, vm) => suspend(plan, vm.id) },
  // back on its host if that can take it, else wherever start would put it
  resume: { from: ['Suspended'], waits: 3, change: (plan, vm, _, now) => powerOn(plan, vm.id, chooseHost(plan, vm, vm.$container).id, now) },
  migrate: {
    from: ['Running', 'Paused'],
    waits: 4,
    change: (plan, vm, params) => move(plan, vm.id, checkChosenHost(plan, vm, requiredString(params, 'hostId'), true).id),
  },
} satisfies Record<string, Transition>

export type PowerAction = keyof typeof transitions

/** Steps a transition takes, for operations that include one. */
export const transitionSteps = (action: PowerAction): number => transitions[action].waits + 1

/** The change of a transition, state check included. */
export function transit(plan: Plan, vmId: string, action: PowerAction, params: Params, now: number): void {
  const transition: Transition = transitions[action]
  const vm = plan.get(vmId, 'VM')
  requirePowerState(vm, transition.from)
  transition.change(plan, vm, params, now)
}

/** Runs a transition as part of `run`, re-checked on the state at the moment it happens. */
export async function runTransition(run: Run, clock: () => number, vmId: string, action: PowerAction, params: Params = {}): Promise<void> {
  await run.wait(transitions[action].waits)
  await run.apply((plan) => transit(plan, vmId, action, params, clock()))
}

const handler =
  (action: PowerAction): ActionHandler =>
  async (op, object, params) => {
    preview(op.env, (plan) => transit(plan, object.id, action, params, op.env.clock()))
    await runTransition(new Run(op, transitionSteps(action)), op.env.clock, object.id, action, params)
    return undefined
  }

export const powerActions: Readonly<Record<PowerAction, ActionHandler>> = {
  start: handler('start'),
  clean_shutdown: handler('clean_shutdown'),
  hard_shutdown: handler('hard_shutdown'),
  clean_reboot: handler('clean_reboot'),
  hard_reboot: handler('hard_reboot'),
  pause: handler('pause'),
  unpause: handler('unpause'),
  suspend: handler('suspend'),
  resume: handler('resume'),
  migrate: handler('migrate'),
}
