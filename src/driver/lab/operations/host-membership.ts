import { incorrectState } from '../../../errors.js'
import type { HostRecord } from '../../../model/records.js'
import { requireHostState } from './host.js'
import { removeFromList } from './lists.js'
import type { ActionHandler } from './params.js'
import type { Plan } from './plan.js'
import { forgetMessages, removeVbd, removeVif } from './removal.js'
import { preview, Run } from './run.js'

/**
 * A member host leaves its pool: `detach` (XAPI's pool.eject) while it runs,
 * `forget` (host.destroy) once it is down. The master coordinates the pool
 * and stays. The host must hold nothing but its control domain and empty
 * local SRs: no VM, no suspended VM, no disk, so nothing is lost with it. It
 * goes with its PIFs, PBDs, empty local SRs and control domain.
 */

function removableHost(plan: Plan, hostId: string, state: HostRecord['power_state']): void {
  const host = plan.get(hostId, 'host')
  if (plan.get(host.$pool, 'pool').master === hostId) {
    throw incorrectState({ actual: true, expected: false, object: hostId, property: 'master' })
  }
  requireHostState(host, state)
  const disks = plan.all('SR').filter((sr) => sr.VDIs.length > 0)
  const held = [...plan.all('VM'), ...plan.all('VM-snapshot'), ...plan.all('VM-template'), ...disks].find(
    (record) => record.$container === hostId,
  )
  if (held !== undefined) throw incorrectState({ actual: hostId, expected: host.$pool, object: held.id, property: '$container' })
}

function removeHost(plan: Plan, hostId: string, state: HostRecord['power_state']): void {
  removableHost(plan, hostId, state)
  const host = plan.get(hostId, 'host')
  for (const id of [...host.PIFs]) {
    removeFromList(plan.edit(plan.get(id, 'PIF').$network, 'network').PIFs, id)
    plan.remove(id, 'PIF')
  }
  for (const id of [...host.$PBDs]) {
    removeFromList(plan.edit(plan.get(id, 'PBD').SR, 'SR').$PBDs, id)
    plan.remove(id, 'PBD')
  }
  for (const sr of plan.all('SR')) {
    if (sr.$container !== hostId) continue
    forgetMessages(plan, [sr.uuid])
    plan.remove(sr.id, 'SR')
  }
  if (host.controlDomain !== undefined) {
    const controller = plan.get(host.controlDomain, 'VM-controller')
    for (const id of [...controller.$VBDs]) removeVbd(plan, id)
    for (const id of [...controller.VIFs]) removeVif(plan, id)
    forgetMessages(plan, [controller.uuid])
    plan.remove(controller.id, 'VM-controller')
  }
  for (const vm of plan.all('VM')) if (vm.affinityHost === hostId) delete plan.edit(vm.id, 'VM').affinityHost
  forgetMessages(plan, [host.uuid])
  plan.remove(hostId, 'host')
}

const leave =
  (state: HostRecord['power_state']): ActionHandler =>
  async (op, object) => {
    preview(op.env, (plan) => removeHost(plan, object.id, state))
    await new Run(op, 1).apply((plan) => removeHost(plan, object.id, state))
    return undefined
  }

export const hostMembershipActions: Readonly<Record<string, ActionHandler>> = {
  detach: leave('Running'),
  forget: leave('Halted'),
}
