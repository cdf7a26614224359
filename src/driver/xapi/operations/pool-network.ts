import { alreadyExists, incorrectState, invalidParameters } from '../../../errors.js'
import { NULL_REF } from '../../../xapi/datamodel/index.js'
import { optionalBoolean, optionalInteger, optionalString, optionalStrings, requiredString } from '../../lab/operations/params.js'
import type { XoRecord } from '../../types.js'
import { created, refOf, step, type Env, type Params, type Target, type XapiAction, type XapiFields } from './context.js'

/**
 * The pool's networks and management interfaces through XAPI, as the
 * reference makes them (xo-server's createNetwork, createBondedNetwork,
 * pool management_reconfigure), checked on the index first as the lab
 * refuses them.
 */

type Records = Readonly<Record<string, XapiFields>>

/** A physical PIF of the pool, bonded to nothing: what a VLAN is made on. */
function physicalPif(env: Env, target: Target, id: string, path: string): { readonly ref: string; readonly pif: XoRecord } {
  const ref = refOf(env, target, id, 'PIF', path)
  const pif = env.index.getObject(id)
  const problem = (message: string) => invalidParameters([{ path, message }])
  if (pif === undefined) throw problem(`PIF ${id} is not in pool ${target.object.id}`)
  if (pif['physical'] !== true) throw problem(`PIF ${id} is not a physical interface`)
  if (pif['isBondSlave'] === true || pif['isBondMaster'] === true) throw problem(`PIF ${id} is already bonded`)
  return { ref, pif }
}

/** The fields of a network the reference creates: its name, description and MTU from the request, not automatic. */
export const networkRecord = (params: Params): XapiFields => ({
  name_label: requiredString(params, 'name'),
  name_description: optionalString(params, 'description') ?? '',
  MTU: optionalInteger(params, 'mtu') ?? 1500,
  other_config: { automatic: 'false' },
  tags: [],
})

/**
 * network.create, then pool.create_VLAN_from_PIF: a PIF tagged `vlan` on the
 * PIF's device on every host. A network whose VLAN cannot be made is
 * destroyed: nothing half made is left.
 */
const createNetwork: XapiAction = async (env, target, params, context) => {
  const { pool } = target
  const vlan = optionalInteger(params, 'vlan') ?? 0
  const { ref: pifRef, pif } = physicalPif(env, target, requiredString(params, 'pif'), 'body.pif')
  const pifs = await pool.call<Records>('PIF.get_all_records', [], { signal: context.signal })
  if (Object.values(pifs).some((other) => other['device'] === pif['device'] && Number(other['VLAN']) === vlan)) throw alreadyExists('PIF', 'vlan', String(vlan))
  const record = networkRecord(params)
  const network = await pool.callAsync<string>('network.create', [record], step(context, 0, 30))
  try {
    if (optionalBoolean(params, 'nbd') === true) await pool.call('network.add_purpose', [network, 'nbd'], { signal: context.signal })
    await pool.callAsync('pool.create_VLAN_from_PIF', [pifRef, network, vlan], step(context, 30, 100))
  } catch (error) {
    // Not under the operation's signal: an aborted creation is taken back too.
    await pool.call('network.destroy', [network]).catch(() => undefined)
    throw error
  }
  return created(env, pool, 'network', network)
}

const isBonded = (pif: XapiFields): boolean => (typeof pif['bond_slave_of'] === 'string' && pif['bond_slave_of'] !== NULL_REF) || (Array.isArray(pif['bond_master_of']) && pif['bond_master_of'].length > 0)

/** Each host's PIFs of the devices, physical and unbonded, in their order: the hosts lacking one get no bond. */
function membersByHost(pifs: Records, devices: readonly unknown[]): string[][] {
  const free = Object.entries(pifs).filter(([, pif]) => pif['physical'] === true && !isBonded(pif))
  const out: string[][] = []
  for (const host of new Set(free.map(([, pif]) => String(pif['host'])))) {
    const members = devices.map((device) => free.find(([, pif]) => pif['host'] === host && pif['device'] === device)?.[0])
    if (members.every((ref): ref is string => ref !== undefined)) out.push(members)
  }
  return out
}

/**
 * network.create, then Bond.create on each host with the same devices as
 * the PIFs given, as the reference bonds a network host by host. A network
 * whose first bond cannot be made is destroyed; the bonds made before a
 * failure stay, as the reference leaves them.
 */
const createBondedNetwork: XapiAction = async (env, target, params, context) => {
  const { pool } = target
  const given = (optionalStrings(params, 'pifIds') ?? []).map((id, i) => physicalPif(env, target, id, `body.pifIds.${i}`).pif)
  const host = given[0]?.['$host']
  if (given.length < 2 || given.some((pif) => pif['$host'] !== host)) throw invalidParameters([{ path: 'body.pifIds', message: 'must name two PIFs or more of one host' }])
  const mode = requiredString(params, 'bondMode')
  const hosts = membersByHost(await pool.call<Records>('PIF.get_all_records', [], { signal: context.signal }), given.map((pif) => pif['device']))
  const record = networkRecord(params)
  const network = await pool.callAsync<string>('network.create', [record], step(context, 0, 20))
  for (const [i, members] of hosts.entries()) {
    try {
      await pool.callAsync('Bond.create', [network, members, '', mode, {}], step(context, 20 + (80 * i) / hosts.length, 20 + (80 * (i + 1)) / hosts.length))
    } catch (error) {
      // Not under the operation's signal: an aborted creation is taken back too.
      if (i === 0) await pool.call('network.destroy', [network]).catch(() => undefined)
      throw error
    }
  }
  return created(env, pool, 'network', network)
}

/** Each host's PIF on the network, which must carry addresses: the management interfaces to be. */
async function requireManagementPifs(env: Env, target: Target, networkId: string, signal: AbortSignal): Promise<void> {
  const network = env.index.getObject(networkId)
  const pifs = (Array.isArray(network?.['PIFs']) ? network['PIFs'] : []).flatMap((id) => env.index.getObject(String(id)) ?? [])
  for (const hostRef of await target.pool.call<string[]>('host.get_all', [], { signal })) {
    const host = env.locator.recordOf(target.pool, hostRef)
    const pif = pifs.find((candidate) => candidate['$host'] === host?.id)
    if (pif === undefined) throw invalidParameters([{ path: 'body.network', message: `host ${host?.id ?? hostRef} has no PIF on network ${networkId}` }])
    if (pif['isBondSlave'] === true) throw incorrectState({ actual: true, expected: false, object: pif.id, property: 'isBondSlave' })
    if (pif['mode'] === 'None') throw incorrectState({ actual: 'None', expected: 'Static or DHCP', object: pif.id, property: 'mode' })
  }
}

/** pool.management_reconfigure: every host's management interface moves to its PIF on the network, its toolstack restarted. */
const managementReconfigure: XapiAction = async (env, target, params, context) => {
  const networkId = requiredString(params, 'network')
  const network = refOf(env, target, networkId, 'network', 'body.network')
  await requireManagementPifs(env, target, networkId, context.signal)
  await target.pool.callAsync('pool.management_reconfigure', [network], step(context))
  return undefined
}

export const poolNetworkActions: Readonly<Record<string, XapiAction>> = {
  create_network: createNetwork,
  create_bonded_network: createBondedNetwork,
  management_reconfigure: managementReconfigure,
}
