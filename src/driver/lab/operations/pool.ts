import { createVmAction } from './create-vm.js'
import { poolNetworkActions } from './pool-network.js'
import { poolMaintenanceActions } from './pool-maintenance.js'
import { addHost } from './pool-join.js'
import { powerOff } from './guest.js'
import { haltHost, stopHost, stopSteps, type StopOptions } from './host.js'
import type { ActionHandler } from './params.js'
import { hostsOfPool, planEvacuation } from './placement.js'
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
 * Every VM of the pool that is not halted is powered off, a host's VMs at
 * once, then that host goes down; the master last since it coordinates the
 * others. Suspended VMs of hosts already down go in a last step.
 */
const emergencyShutdown: ActionHandler = async (op, object) => {
  const notHalted = (plan: Plan): string[] =>
    plan
      .all('VM')
      .filter((vm) => vm.$pool === object.id && vm.power_state !== 'Halted')
      .map((vm) => vm.id)
  const { hosts, leftOver } = preview(op.env, (plan) => {
    const order = runningHosts(plan, object.id, 'last')
    const onThem = new Set(order.flatMap((id) => plan.get(id, 'host').residentVms))
    return { hosts: order, leftOver: notHalted(plan).some((id) => !onThem.has(id)) }
  })
  const run = new Run(op, 2 * hosts.length + (leftOver ? 1 : 0))
  for (const id of hosts) {
    const resident = (plan: Plan): string[] => plan.get(id, 'host').residentVms.filter((vm) => plan.find(vm)?.type === 'VM')
    await run.apply((plan) => {
      for (const vm of resident(plan)) if (plan.get(vm, 'VM').power_state !== 'Halted') powerOff(plan, vm)
    })
    await run.apply((plan) => {
      if (plan.get(id, 'host').power_state !== 'Running') return
      // VMs that landed there since the previous step go down with it.
      for (const vm of resident(plan)) if (plan.get(vm, 'VM').power_state !== 'Halted') powerOff(plan, vm)
      haltHost(plan, id)
    })
  }
  if (leftOver) {
    await run.apply((plan) => {
      for (const id of notHalted(plan)) powerOff(plan, id)
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
  ...poolNetworkActions,
  ...poolMaintenanceActions,
  add_host: addHost,
}
