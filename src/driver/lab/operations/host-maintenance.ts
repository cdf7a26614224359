import { incorrectState, invalidParameters } from '../../../errors.js'
import type { HostRecord } from '../../../model/records.js'
import { powerOff, powerOn, seconds, suspend } from './guest.js'
import { bootHost, haltHost, requireHostState } from './host.js'
import { requiredString, type ActionHandler } from './params.js'
import { liveGuests } from './placement.js'
import type { Frozen, Plan } from './plan.js'
import { preview, Run } from './run.js'

/**
 * The host actions that do not evacuate: the toolstack, the management
 * interface, and the two ways down that take the VMs with the host.
 */

/** Steps a host takes to boot once powered on, as host.ts's start. */
const BOOT_WAITS = 2

const running = (plan: Plan, hostId: string): Frozen<HostRecord> => {
  const host = plan.get(hostId, 'host')
  requireHostState(host, 'Running')
  return host
}

/** Its VMs keep running: only the agent's start time changes. */
export function restartAgent(plan: Plan, hostId: string, now: number): void {
  running(plan, hostId)
  const host = plan.edit(hostId, 'host')
  const time = seconds(now)
  host.agentStartTime = time
  host.otherConfig = { ...host.otherConfig, agent_start_time: `${time}.` }
}

/** The PIF must be one of this host's and plugged; it alone carries management afterwards. */
export function moveManagement(plan: Plan, hostId: string, pifId: string): void {
  const host = running(plan, hostId)
  const pif = plan.get(pifId, 'PIF')
  if (pif.$host !== hostId) throw invalidParameters([{ path: 'body.pif', message: 'is not a PIF of this host' }])
  if (!pif.attached) throw incorrectState({ actual: false, expected: true, object: pif.id, property: 'attached' })
  for (const id of host.PIFs) {
    const other = plan.get(id, 'PIF')
    if (other.management !== (id === pifId)) plan.edit(id, 'PIF').management = id === pifId
  }
  if (pif.ip !== '') plan.edit(hostId, 'host').address = pif.ip
}

function powerOffGuests(plan: Plan, hostId: string): void {
  for (const vm of liveGuests(plan, running(plan, hostId))) powerOff(plan, vm.id)
}

/** Suspends the host's live VMs and names them. */
function suspendGuests(plan: Plan, hostId: string): string[] {
  const guests = liveGuests(plan, running(plan, hostId)).map((vm) => vm.id)
  for (const id of guests) suspend(plan, id)
  return guests
}

/**
 * Running and paused VMs are suspended with the host (XO's smart reboot
 * without its evacuation), and resumed on it, running, once it is back.
 */
const smartReboot: ActionHandler = async (op, object) => {
  preview(op.env, (plan) => running(plan, object.id))
  const run = new Run(op, BOOT_WAITS + 5)
  const guests = await run.apply((plan) => suspendGuests(plan, object.id))
  await run.apply((plan) => {
    // VMs that started on it since the previous step are suspended with it too.
    guests.push(...suspendGuests(plan, object.id))
    haltHost(plan, object.id)
  })
  run.pastPointOfNoReturn()
  await run.wait(BOOT_WAITS)
  await run.apply((plan) => bootHost(plan, object.id, op.env.clock()))
  await run.apply((plan) => {
    // Only those still suspended there: a VM destroyed or resumed meanwhile is left as it is.
    for (const id of guests) {
      const vm = plan.find(id)
      if (vm?.type === 'VM' && vm['power_state'] === 'Suspended' && vm['$container'] === object.id) powerOn(plan, id, object.id, op.env.clock())
    }
  })
  return undefined
}

export const hostMaintenanceActions: Readonly<Record<string, ActionHandler>> = {
  restart_toolstack: async (op, object) => {
    preview(op.env, (plan) => restartAgent(plan, object.id, op.env.clock()))
    const run = new Run(op, 2)
    await run.wait(1)
    await run.apply((plan) => restartAgent(plan, object.id, op.env.clock()))
    return undefined
  },
  // The lab's NICs are all known already: the scan finds nothing new.
  scan_pifs: async (op, object) => {
    preview(op.env, (plan) => running(plan, object.id))
    await new Run(op, 1).apply((plan) => running(plan, object.id))
    return undefined
  },
  management_reconfigure: async (op, object, params) => {
    const pif = requiredString(params, 'pif')
    preview(op.env, (plan) => moveManagement(plan, object.id, pif))
    await new Run(op, 1).apply((plan) => moveManagement(plan, object.id, pif))
    return undefined
  },
  emergency_shutdown: async (op, object) => {
    preview(op.env, (plan) => running(plan, object.id))
    const run = new Run(op, 2)
    await run.apply((plan) => powerOffGuests(plan, object.id))
    await run.apply((plan) => {
      powerOffGuests(plan, object.id)
      haltHost(plan, object.id)
    })
    return undefined
  },
  smart_reboot: smartReboot,
}
