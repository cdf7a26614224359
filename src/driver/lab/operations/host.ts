import { incorrectState } from '../../../errors.js'
import type { HostRecord } from '../../../model/records.js'
import { move, powerOff, powerOn, refreshHostMemory, seconds, setPaused } from './guest.js'
import type { ActionHandler } from './params.js'
import { chooseHost, liveGuests, pinnedGuests, planEvacuation, type PinnedVms } from './placement.js'
import type { Frozen, Plan } from './plan.js'
import { preview, Run, type Operation } from './run.js'

/**
 * Host power and maintenance. A host stops only once its live VMs are gone:
 * it is disabled first so that nothing new lands on it, the VMs are migrated
 * a batch per step, then it goes down. If the evacuation fails or is aborted,
 * the host is enabled again as it was; once it is evacuated, it goes down
 * (and for a reboot, comes back) whatever happens.
 */

/** Steps a host takes to boot once powered on. */
const BOOT_WAITS = 2

/** VMs migrated together in one evacuation step, as XAPI's host.evacuate does in parallel batches. */
const EVACUATION_BATCH = 10

export function requireHostState(host: Frozen<HostRecord>, expected: HostRecord['power_state']): void {
  if (host.power_state !== expected) {
    throw incorrectState({ actual: host.power_state, expected, object: host.id, property: 'power_state' })
  }
}

function setEnabled(plan: Plan, hostId: string, enabled: boolean): void {
  const host = plan.edit(hostId, 'host')
  requireHostState(host, 'Running')
  host.enabled = enabled
}

/** The host goes down with its control domain; suspended VMs stay with it. */
export function haltHost(plan: Plan, hostId: string): void {
  const host = plan.edit(hostId, 'host')
  requireHostState(host, 'Running')
  const [stayed] = liveGuests(plan, host)
  if (stayed !== undefined) {
    throw incorrectState({ actual: stayed.power_state, expected: 'Halted', object: stayed.id, property: 'power_state' })
  }
  host.power_state = 'Halted'
  host.enabled = false
  if (host.controlDomain !== undefined) {
    const controller = plan.edit(host.controlDomain, 'VM-controller')
    controller.power_state = 'Halted'
    controller.startTime = null
  }
  refreshHostMemory(plan, hostId)
}

/** The host is up again, enabled, with a new boot time. */
export function bootHost(plan: Plan, hostId: string, now: number): void {
  const host = plan.edit(hostId, 'host')
  requireHostState(host, 'Halted')
  const time = seconds(now)
  host.power_state = 'Running'
  host.enabled = true
  host.startTime = time
  host.agentStartTime = time
  host.rebootRequired = false
  host.otherConfig = { ...host.otherConfig, boot_time: `${time}.`, agent_start_time: `${time}.` }
  if (host.controlDomain !== undefined) {
    const controller = plan.edit(host.controlDomain, 'VM-controller')
    controller.power_state = 'Running'
    controller.startTime = time
  }
  refreshHostMemory(plan, hostId)
}

export interface StopOptions {
  readonly reboot: boolean
  /**
   * `refuse`: VMs on the host's local storage make it a 409. `leave`: they
   * are shut down before the host goes down and started again once it is
   * back, as XO's rolling reboot does with `shutdownPinnedVms`.
   */
  readonly pinned: PinnedVms
}

/** Steps `stopHost` takes for a host in the current state; fails as it would. */
export function stopSteps(plan: Plan, hostId: string, { reboot, pinned }: StopOptions): number {
  const host = plan.get(hostId, 'host')
  requireHostState(host, 'Running')
  const batches = Math.ceil(planEvacuation(plan, hostId, pinned).length / EVACUATION_BATCH)
  const stops = pinned === 'leave' && pinnedGuests(plan, host).length > 0 ? 1 : 0
  return (host.enabled ? 1 : 0) + batches + stops + 1 + (reboot ? BOOT_WAITS + 1 + stops : 0)
}

/** Evacuates and stops a host (and boots it again for a reboot), as steps of `run`. */
export async function stopHost(run: Run, clock: () => number, hostId: string, { reboot, pinned }: StopOptions): Promise<void> {
  let disabled = false
  try {
    if (run.read((plan) => plan.get(hostId, 'host').enabled)) {
      await run.apply((plan) => setEnabled(plan, hostId, false))
      disabled = true
    }
    // Planned again at each step: VMs may have started, stopped or moved meanwhile.
    while (run.read((plan) => planEvacuation(plan, hostId, pinned).length > 0)) {
      await run.apply((plan) => {
        for (const next of planEvacuation(plan, hostId, pinned).slice(0, EVACUATION_BATCH)) move(plan, next.vm, next.to)
      })
    }
  } catch (error) {
    if (disabled) {
      run.applyNow((plan) => {
        const host = plan.get(hostId, 'host')
        if (host.power_state === 'Running' && !host.enabled) setEnabled(plan, hostId, true)
      })
    }
    throw error
  }
  run.pastPointOfNoReturn()
  const stopped = run.read((plan) => pinnedGuests(plan, plan.get(hostId, 'host')).map((vm) => ({ id: vm.id, state: vm.power_state })))
  if (stopped.length > 0) {
    await run.apply((plan) => {
      for (const { id } of stopped) powerOff(plan, id)
    })
  }
  await run.apply((plan) => haltHost(plan, hostId))
  if (!reboot) return
  await run.wait(BOOT_WAITS)
  await run.apply((plan) => bootHost(plan, hostId, clock()))
  if (stopped.length === 0) return
  await run.apply((plan) => {
    for (const { id, state } of stopped) {
      powerOn(plan, id, chooseHost(plan, plan.get(id, 'VM')).id, clock())
      // XAPI starts a VM paused on request: it comes back as it was.
      if (state === 'Paused') setPaused(plan, id, true)
    }
  })
}

const stopAction =
  (reboot: boolean): ActionHandler =>
  async (op: Operation, object) => {
    const options: StopOptions = { reboot, pinned: 'refuse' }
    const steps = preview(op.env, (plan) => stopSteps(plan, object.id, options))
    await stopHost(new Run(op, steps), op.env.clock, object.id, options)
    return undefined
  }

const enableAction =
  (enabled: boolean): ActionHandler =>
  async (op, object) => {
    preview(op.env, (plan) => setEnabled(plan, object.id, enabled))
    await new Run(op, 1).apply((plan) => setEnabled(plan, object.id, enabled))
    return undefined
  }

export const hostActions: Readonly<Record<string, ActionHandler>> = {
  disable: enableAction(false),
  enable: enableAction(true),
  clean_reboot: stopAction(true),
  clean_shutdown: stopAction(false),
  start: async (op, object) => {
    preview(op.env, (plan) => bootHost(plan, object.id, op.env.clock()))
    const run = new Run(op, BOOT_WAITS + 2)
    await run.wait(BOOT_WAITS + 1)
    await run.apply((plan) => bootHost(plan, object.id, op.env.clock()))
    return undefined
  },
}
