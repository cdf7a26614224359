import { createVmAction } from './create-vm.js'
import { powerOff } from './guest.js'
import { haltHost, stopHost, stopSteps, type StopOptions } from './host.js'
import type { ActionHandler } from './params.js'
import { hostsOfPool, liveGuests, planEvacuation } from './placement.js'
import type { Plan } from './plan.js'
import { preview, Run } from './run.js'

/** The ids of the pool's hosts that are up, the master first or last. */
function runningHosts(plan: Plan, poolId: string, master: 'first' | 'last'): string[] {
  const masterId = plan.get(poolId, 'pool').master
  const hosts = hostsOfPool(plan, poolId).filter((host) => host.power_state === 'Running')
  const others = hosts.filter((host) => host.id !== masterId).map((host) => host.id)
  const masters = hosts.filter((host) => host.id === masterId).map((host) => host.id)
  return master === 'first' ? [...masters, ...others] : [...others, ...masters]
}

/**
 * Every VM of the pool that is not halted is powered off, one step each,
 * then the hosts go down, the master last since it coordinates the others.
 */
const emergencyShutdown: ActionHandler = async (op, object) => {
  const { vms, hosts } = preview(op.env, (plan) => ({
    vms: plan
      .all('VM')
      .filter((vm) => vm.$pool === object.id && vm.power_state !== 'Halted')
      .map((vm) => vm.id),
    hosts: runningHosts(plan, object.id, 'last'),
  }))
  const run = new Run(op, vms.length + hosts.length)
  for (const id of vms) {
    await run.apply((plan) => {
      if (plan.get(id, 'VM').power_state !== 'Halted') powerOff(plan, id)
    })
  }
  for (const id of hosts) {
    await run.apply((plan) => {
      const host = plan.get(id, 'host')
      if (host.power_state !== 'Running') return
      // VMs started since the first steps go down with their host.
      for (const vm of liveGuests(plan, host)) powerOff(plan, vm.id)
      haltHost(plan, id)
    })
  }
  return undefined
}

const ROLLING: StopOptions = { reboot: true, pinned: 'leave' }

/**
 * Each running host in turn, the master first as XO does: evacuated,
 * rebooted, back. VMs on a host's local storage cannot leave it: they are
 * shut down and started again around its reboot. Every host's evacuation
 * must fit in the others' memory before anything starts; VMs are not moved
 * back afterwards.
 */
const rollingReboot: ActionHandler = async (op, object) => {
  const hosts = preview(op.env, (plan) => {
    const order = runningHosts(plan, object.id, 'first')
    for (const id of order) planEvacuation(plan, id, ROLLING.pinned)
    return order
  })
  const run = new Run(op, hosts.length)
  for (const [i, id] of hosts.entries()) {
    const steps = run.read((plan) => stopSteps(plan, id, ROLLING))
    await stopHost(run.part(steps, i / hosts.length, (i + 1) / hosts.length), op.env.clock, id, ROLLING)
  }
  return undefined
}

export const poolActions: Readonly<Record<string, ActionHandler>> = {
  create_vm: createVmAction,
  emergency_shutdown: emergencyShutdown,
  rolling_reboot: rollingReboot,
}
