import { incorrectState, invalidParameters } from '../../../errors.js'
import { labMissingPatches } from '../host-facts.js'
import { moveManagement, restartAgent } from './host-maintenance.js'
import { requireHostState, stopHost, stopSteps, type StopOptions } from './host.js'
import { optionalBoolean, requiredString, type ActionHandler } from './params.js'
import { hostsOfPool, planEvacuation } from './placement.js'
import type { Plan } from './plan.js'
import { preview, Run, type Operation } from './run.js'

/** Each host's PIF on the network, which must have addresses: the management interfaces to be. */
function managementPifs(plan: Plan, poolId: string, networkId: string): Array<{ host: string; pif: string }> {
  const network = plan.get(networkId, 'network')
  if (network.$pool !== poolId) throw invalidParameters([{ path: 'body.network', message: `network ${networkId} is not in pool ${poolId}` }])
  return hostsOfPool(plan, poolId).map((host) => {
    const pif = network.PIFs.map((id) => plan.get(id, 'PIF')).find((candidate) => candidate.$host === host.id)
    if (pif === undefined) throw invalidParameters([{ path: 'body.network', message: `host ${host.id} has no PIF on network ${networkId}` }])
    if (pif.isBondSlave) throw incorrectState({ actual: true, expected: false, object: pif.id, property: 'isBondSlave' })
    if (pif.mode === 'None') throw incorrectState({ actual: 'None', expected: 'Static or DHCP', object: pif.id, property: 'mode' })
    return { host: host.id, pif: pif.id }
  })
}

/** Every host moves its management interface to its PIF on the network, then restarts its toolstack. */
function reconfigure(plan: Plan, poolId: string, networkId: string, now: number): void {
  for (const { host, pif } of managementPifs(plan, poolId, networkId)) {
    moveManagement(plan, host, pif)
    restartAgent(plan, host, now)
  }
}

const managementReconfigure: ActionHandler = async (op, object, params) => {
  const network = requiredString(params, 'network')
  preview(op.env, (plan) => reconfigure(plan, object.id, network, op.env.clock()))
  const run = new Run(op, 2)
  await run.wait()
  await run.apply((plan) => reconfigure(plan, object.id, network, op.env.clock()))
  return undefined
}

/**
 * The lab's patch catalogue (host-facts.ts) installed host by host, the
 * master last, each host evacuated, patched and rebooted in turn (XO's
 * rolling pool update). Hosts missing nothing are left alone. VMs that
 * cannot leave their host (disks on its local SR) make it a 409 unless
 * `shutdownPinnedVms`: then they are shut down and started again around the
 * reboot. Every evacuation must fit before anything starts.
 */
const rollingUpdate: ActionHandler = async (op, object, params) => {
  const options: StopOptions = { reboot: true, pinned: optionalBoolean(params, 'shutdownPinnedVms') === true ? 'leave' : 'refuse' }
  const hosts = preview(op.env, (plan) => {
    const master = plan.get(object.id, 'pool').master
    const pool = hostsOfPool(plan, object.id)
    const down = pool.find((host) => host.power_state !== 'Running')
    if (down !== undefined) throw incorrectState({ actual: down.power_state, expected: 'Running', object: down.id, property: 'power_state' })
    const order = pool.filter((host) => labMissingPatches(host).length > 0).sort((a, b) => Number(a.id === master) - Number(b.id === master))
    for (const host of order) planEvacuation(plan, host.id, options.pinned)
    return order.map((host) => host.id)
  })
  const run = new Run(op, hosts.length)
  for (const [i, id] of hosts.entries()) {
    const part = run.part(run.read((plan) => stopSteps(plan, id, options)) + 1, i / hosts.length, (i + 1) / hosts.length)
    await part.apply((plan) => install(plan, id))
    await stopHost(part, op.env.clock, id, options)
  }
  return undefined
}

/** The catalogue's patches the host lacks, installed: they take effect at its next reboot. */
function install(plan: Plan, hostId: string): void {
  const host = plan.edit(hostId, 'host')
  requireHostState(host, 'Running')
  host.patches = [...host.patches, ...labMissingPatches(host).map((patch) => patch.name)]
  host.rebootRequired = true
}

/** One host's missing patches installed, without the reboot: XCP-ng's updater plugin, for the XAPI simulator. */
export async function installPatches(op: Operation, hostId: string): Promise<void> {
  preview(op.env, (plan) => install(plan, hostId))
  await new Run(op, 1).apply((plan) => install(plan, hostId))
}

export const poolMaintenanceActions: Readonly<Record<string, ActionHandler>> = {
  management_reconfigure: managementReconfigure,
  rolling_update: rollingUpdate,
}
