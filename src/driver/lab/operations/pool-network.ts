import { alreadyExists, invalidParameters } from '../../../errors.js'
import type { NetworkRecord, PifRecord } from '../../../model/records.js'
import { networkDefaults } from '../record-defaults.js'
import { identity } from './builders.js'
import { addToList } from './lists.js'
import { optionalBoolean, optionalInteger, optionalString, optionalStrings, requiredString, type ActionHandler, type Params } from './params.js'
import type { Frozen, Plan } from './plan.js'
import { preview, Run, type Operation } from './run.js'

/**
 * Networks a pool makes: internal (no PIF), VLAN (a tagged PIF on the same
 * device of every host, as XAPI's pool.create_VLAN_from_PIF) and bonded (a
 * bond of the same devices on every host that has them all, as XO does with
 * Bond.create host by host).
 */

type Pif = Frozen<PifRecord>

/** The first `xapi<N>` bridge the pool does not use yet, as XAPI names the bridges it makes. */
function freeBridge(plan: Plan, poolId: string): string {
  const taken = new Set(plan.all('network').filter((network) => network.$pool === poolId).map((network) => network.bridge))
  let index = 0
  while (taken.has(`xapi${index}`)) index += 1
  return `xapi${index}`
}

function addNetwork(plan: Plan, poolId: string, params: Params, extra: Partial<NetworkRecord> = {}): NetworkRecord {
  return plan.add<NetworkRecord>({
    type: 'network',
    ...identity(poolId),
    name_label: requiredString(params, 'name'),
    name_description: optionalString(params, 'description') ?? '',
    tags: [],
    bridge: freeBridge(plan, poolId),
    MTU: optionalInteger(params, 'mtu') ?? 1500,
    ...networkDefaults(),
    ...extra,
  })
}

/** A PIF made by the pool (VLAN or bond master) on `network`, linked from its host and network. */
function addPif(plan: Plan, network: NetworkRecord, from: Pif, fields: Pick<PifRecord, 'device' | 'vlan' | 'isBondMaster'> & Partial<PifRecord>): PifRecord {
  const pif = plan.add<PifRecord>({
    type: 'PIF',
    ...identity(network.$pool),
    mac: from.mac,
    mtu: network.MTU,
    ip: '',
    netmask: '',
    gateway: '',
    dns: '',
    ipv6: [],
    mode: 'None',
    ipv6Mode: 'None',
    primaryAddressType: 'IPv4',
    attached: true,
    carrier: from.carrier,
    management: false,
    physical: false,
    disallowUnplug: false,
    isBondSlave: false,
    $host: from.$host,
    $network: network.id,
    ...fields,
  })
  addToList(plan.edit(network.id, 'network').PIFs, pif.id)
  const host = plan.edit(from.$host, 'host')
  addToList(host.PIFs, pif.id)
  addToList(host.$PIFs, pif.id)
  return pif
}

/** A physical PIF of the pool, bonded to nothing: what VLANs and bonds are made on. */
function physicalPif(plan: Plan, poolId: string, id: string, path: string): Pif {
  const pif = plan.get(id, 'PIF')
  const problem = (message: string) => invalidParameters([{ path, message }])
  if (pif.$pool !== poolId) throw problem(`PIF ${id} is not in pool ${poolId}`)
  if (!pif.physical) throw problem(`PIF ${id} is not a physical interface`)
  if (pif.isBondSlave || pif.isBondMaster) throw problem(`PIF ${id} is already bonded`)
  return pif
}

/** Each host's physical, unbonded PIF of `device`. */
const devicePifs = (plan: Plan, poolId: string, device: string): Pif[] =>
  plan.all('PIF').filter((pif) => pif.$pool === poolId && pif.device === device && pif.physical && !pif.isBondSlave && !pif.isBondMaster)

/** The PIF a VLAN is made from, checked before anything is made: physical, unbonded, its device not tagged `vlan` yet. */
function vlanSource(plan: Plan, poolId: string, pifId: string, vlan: number): Pif {
  const from = physicalPif(plan, poolId, pifId, 'body.pif')
  if (plan.all('PIF').some((pif) => pif.$pool === poolId && pif.device === from.device && pif.vlan === vlan)) {
    throw alreadyExists('PIF', 'vlan', String(vlan))
  }
  return from
}

/** A PIF tagged `vlan` on the device of `from` on every host, onto `network`. */
function addVlanPifs(plan: Plan, poolId: string, network: NetworkRecord, from: Pif, vlan: number): void {
  for (const pif of devicePifs(plan, poolId, from.device)) addPif(plan, network, pif, { device: pif.device, vlan, isBondMaster: false })
}

function vlanNetwork(plan: Plan, poolId: string, params: Params): string {
  const vlan = optionalInteger(params, 'vlan') ?? 0
  const from = vlanSource(plan, poolId, requiredString(params, 'pif'), vlan)
  const network = addNetwork(plan, poolId, params, { nbd: optionalBoolean(params, 'nbd') ?? false })
  addVlanPifs(plan, poolId, network, from, vlan)
  return network.id
}

/**
 * XAPI's pool.create_VLAN_from_PIF on a network that exists (network.create
 * made it): its VLAN PIFs, with the network's MTU.
 */
function vlanOnNetwork(plan: Plan, networkId: string, pifId: string, vlan: number): void {
  const network = plan.get(networkId, 'network')
  const from = vlanSource(plan, network.$pool, pifId, vlan)
  addVlanPifs(plan, network.$pool, plan.edit(networkId, 'network'), from, vlan)
}

export async function createVlan(op: Operation, networkId: string, pifId: string, vlan: number): Promise<void> {
  preview(op.env, (plan) => vlanOnNetwork(plan, networkId, pifId, vlan))
  await new Run(op, 1).apply((plan) => vlanOnNetwork(plan, networkId, pifId, vlan))
}

/** The PIFs given, physical, unbonded and of one host: what a bond is made of. */
function bondMembers(plan: Plan, poolId: string, ids: readonly string[]): Pif[] {
  const pifs = ids.map((id, i) => physicalPif(plan, poolId, id, `body.pifIds.${i}`))
  const host = pifs[0]?.$host
  if (pifs.length < 2 || pifs.some((pif) => pif.$host !== host)) {
    throw invalidParameters([{ path: 'body.pifIds', message: 'must name two PIFs or more of one host' }])
  }
  return pifs
}

/** The first `bond<N>` device the pool (or one host of it) does not use yet. */
function freeBondDevice(plan: Plan, poolId: string, hostId?: string): string {
  const taken = new Set(plan.all('PIF').filter((pif) => pif.$pool === poolId && (hostId === undefined || pif.$host === hostId)).map((pif) => pif.device))
  let index = 0
  while (taken.has(`bond${index}`)) index += 1
  return `bond${index}`
}

/**
 * A bond of `members` (of one host) on `network`, as XAPI's Bond.create: a
 * bond taking the management interface takes its addresses and the
 * management role.
 */
function addBond(plan: Plan, network: NetworkRecord, members: readonly Pif[], device: string): void {
  const [first] = members
  if (first === undefined) return
  const managed = members.find((pif) => pif.management)
  const master = addPif(plan, network, first, {
    device,
    vlan: -1,
    isBondMaster: true,
    bondSlaves: members.map((pif) => pif.id),
    ...(managed === undefined
      ? {}
      : { management: true, disallowUnplug: true, ip: managed.ip, netmask: managed.netmask, gateway: managed.gateway, dns: managed.dns, mode: managed.mode }),
  })
  for (const pif of members) {
    const slave = plan.edit(pif.id, 'PIF')
    slave.isBondSlave = true
    slave.bondMaster = master.id
    // The bond carries the traffic and the addresses now.
    Object.assign(slave, { management: false, disallowUnplug: false, ip: '', netmask: '', gateway: '', dns: '', mode: 'None' })
  }
}

/**
 * The PIFs name devices of one host; each host with all those devices gets a
 * bond of them, as XO does with Bond.create host by host.
 */
function bondedNetwork(plan: Plan, poolId: string, params: Params): string {
  const devices = bondMembers(plan, poolId, optionalStrings(params, 'pifIds') ?? []).map((pif) => pif.device)
  const device = freeBondDevice(plan, poolId)
  const network = addNetwork(plan, poolId, params, { isBonded: true })
  for (const hostId of new Set(devicePifs(plan, poolId, devices[0] ?? '').map((pif) => pif.$host))) {
    const slaves = devices.map((name) => devicePifs(plan, poolId, name).find((pif) => pif.$host === hostId))
    // A host lacking one of the devices gets no bond.
    if (slaves.some((pif) => pif === undefined)) continue
    addBond(plan, network, slaves.filter((pif): pif is Pif => pif !== undefined), device)
  }
  return network.id
}

/** XAPI's Bond.create on a network that exists (network.create made it): one host's bond. */
function bondOnNetwork(plan: Plan, networkId: string, pifIds: readonly string[]): void {
  const network = plan.get(networkId, 'network')
  const members = bondMembers(plan, network.$pool, pifIds)
  const edited = plan.edit(networkId, 'network')
  edited.isBonded = true
  // XAPI names a bond after the bonds of its host.
  addBond(plan, edited, members, freeBondDevice(plan, network.$pool, members[0]?.$host))
}

export async function createBond(op: Operation, networkId: string, pifIds: readonly string[]): Promise<void> {
  preview(op.env, (plan) => bondOnNetwork(plan, networkId, pifIds))
  await new Run(op, 1).apply((plan) => bondOnNetwork(plan, networkId, pifIds))
}

const creatingNetwork =
  (build: (plan: Plan, poolId: string, params: Params) => string): ActionHandler =>
  async (op, object, params) => {
    preview(op.env, (plan) => build(plan, object.id, params))
    return { id: await new Run(op, 1).apply((plan) => build(plan, object.id, params)), type: 'network' }
  }

export const poolNetworkActions: Readonly<Record<string, ActionHandler>> = {
  create_internal_network: creatingNetwork((plan, poolId, params) => addNetwork(plan, poolId, params).id),
  create_network: creatingNetwork(vlanNetwork),
  create_bonded_network: creatingNetwork(bondedNetwork),
}
