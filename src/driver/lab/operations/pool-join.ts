import { incorrectState, invalidParameters } from '../../../errors.js'
import type { PbdRecord } from '../../../model/records.js'
import { identity } from './builders.js'
import { requireHostState } from './host.js'
import { addToList, removeFromList } from './lists.js'
import { optionalBoolean, requiredString, type ActionHandler } from './params.js'
import { hostsOfPool } from './placement.js'
import type { LabType, Plan } from './plan.js'
import { forgetMessages, removeVbd, removeVif } from './removal.js'
import { preview, Run } from './run.js'

/**
 * A host joins a pool (XAPI's pool.join): it must be alone in its own pool,
 * running, of the pool's version unless `force`, and its pool must hold
 * nothing the join would lose: no VM, snapshot, or template of its own (XAPI
 * drops the joining host's database), no shared SR (XAPI's
 * JOINING_HOST_CANNOT_CONTAIN_SHARED_SRS). The host keeps its local SRs and
 * disks; its PIFs go onto the pool's networks of the same device, or bring
 * their network along; it gets a PBD to each shared SR of the pool. Its old
 * pool goes, with its default templates and storage drivers.
 */

function checkJoin(plan: Plan, poolId: string, hostId: string, force: boolean): string {
  const host = plan.get(hostId, 'host')
  const from = host.$pool
  if (from === poolId) throw invalidParameters([{ path: 'body.host', message: `host ${hostId} is already in pool ${poolId}` }])
  requireHostState(host, 'Running')
  const master = plan.get(plan.get(poolId, 'pool').master, 'host')
  requireHostState(master, 'Running')
  const alone = hostsOfPool(plan, from).length
  if (alone !== 1) throw incorrectState({ actual: alone, expected: 1, object: from, property: 'hosts' })
  if (!force && (host.productBrand !== master.productBrand || host.version !== master.version)) {
    throw incorrectState({ actual: `${host.productBrand} ${host.version}`, expected: `${master.productBrand} ${master.version}`, object: hostId, property: 'version' })
  }
  const held = [...plan.all('VM'), ...plan.all('VM-snapshot'), ...plan.all('VM-template').filter((template) => !template.isDefaultTemplate)].find(
    (record) => record.$pool === from,
  )
  if (held !== undefined) throw incorrectState({ actual: from, expected: poolId, object: held.id, property: '$pool' })
  const shared = plan.all('SR').find((sr) => sr.$pool === from && sr.shared)
  if (shared !== undefined) throw incorrectState({ actual: true, expected: false, object: shared.id, property: 'shared' })
  return from
}

/** The join worked out on a plan (the XAPI simulator runs it on two labs' records together). */
export function planJoin(plan: Plan, poolId: string, hostId: string, force: boolean): void {
  const from = checkJoin(plan, poolId, hostId, force)
  const rehome = (id: string, ...types: [LabType, ...LabType[]]): void => {
    const record = plan.edit(id, ...types)
    record.$pool = poolId
    record.$poolId = poolId
  }
  // What the old pool held of the host's own: itself, its storage and disks, its control domain, the messages about them.
  forgetMessages(plan, [plan.get(from, 'pool').uuid])
  for (const type of ['host', 'SR', 'PBD', 'VDI', 'VDI-snapshot', 'VM-controller', 'message'] as const) {
    for (const record of plan.all(type)) if (record.$pool === from) rehome(record.id, type)
  }
  const host = plan.get(hostId, 'host')
  if (host.controlDomain !== undefined) {
    const controller = plan.get(host.controlDomain, 'VM-controller')
    for (const id of [...controller.$VBDs]) rehome(id, 'VBD')
    for (const id of [...controller.VIFs]) rehome(id, 'VIF')
  }
  const master = plan.get(plan.get(poolId, 'pool').master, 'host')
  const masterPifs = master.PIFs.map((id) => plan.get(id, 'PIF'))
  for (const id of host.PIFs) {
    const pif = plan.get(id, 'PIF')
    rehome(id, 'PIF')
    const twin = masterPifs.find((other) => other.device === pif.device && other.vlan === pif.vlan)
    if (twin === undefined) continue
    removeFromList(plan.edit(pif.$network, 'network').PIFs, id)
    addToList(plan.edit(twin.$network, 'network').PIFs, id)
    plan.edit(id, 'PIF').$network = twin.$network
  }
  for (const network of plan.all('network')) {
    if (network.$pool !== from) continue
    if (network.PIFs.length === 0 && network.VIFs.length === 0) plan.remove(network.id, 'network')
    else rehome(network.id, 'network')
  }
  for (const template of plan.all('VM-template')) {
    if (template.$pool !== from) continue
    for (const id of [...template.$VBDs]) removeVbd(plan, id)
    for (const id of [...template.VIFs]) removeVif(plan, id)
    plan.remove(template.id, 'VM-template')
  }
  // The pool's storage drivers serve the host from now on; one it lacks comes along for the host's local SRs.
  const drivers = new Set(plan.all('SM').filter((sm) => sm.$pool === poolId).map((sm) => sm.SM_type))
  for (const sm of plan.all('SM')) {
    if (sm.$pool !== from) continue
    if (drivers.has(sm.SM_type)) plan.remove(sm.id, 'SM')
    else rehome(sm.id, 'SM')
  }
  for (const group of plan.all('gpuGroup')) if (group.$pool === from) plan.remove(group.id, 'gpuGroup')
  plan.remove(from, 'pool')
  for (const sr of plan.all('SR')) {
    if (sr.$pool !== poolId || !sr.shared) continue
    const model = sr.$PBDs.map((id) => plan.get(id, 'PBD'))[0]
    const pbd = plan.add<PbdRecord>({
      type: 'PBD',
      ...identity(poolId),
      attached: true,
      host: hostId,
      SR: sr.id,
      device_config: { ...model?.device_config },
      otherConfig: {},
    })
    addToList(plan.edit(sr.id, 'SR').$PBDs, pbd.id)
    addToList(plan.edit(hostId, 'host').$PBDs, pbd.id)
  }
}

export const addHost: ActionHandler = async (op, object, params) => {
  const hostId = requiredString(params, 'host')
  const force = optionalBoolean(params, 'force') ?? false
  preview(op.env, (plan) => planJoin(plan, object.id, hostId, force))
  const run = new Run(op, 3)
  await run.wait(2)
  await run.apply((plan) => planJoin(plan, object.id, hostId, force))
  return undefined
}
