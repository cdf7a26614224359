import type { XoRecord } from '../driver/types.js'
import type { XmlRpcStruct, XmlRpcValue } from '../xapi/xml-rpc.js'
import { createdRef, failure, labObject, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext } from './context.js'
import { operationNotAllowed, XapiFailure } from './failures.js'
import { bondRef } from './records/network.js'
import { setField } from './writes.js'

const refs = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : [])

/**
 * network.destroy as XAPI's (xapi_network.ml): refused while a VIF on it is
 * plugged (NETWORK_CONTAINS_VIF [vifs]) or a PIF is on it
 * (NETWORK_CONTAINS_PIF [pifs]); the unplugged VIFs go with the network.
 */
async function destroyNetwork(context: CallContext, ref: string): Promise<string> {
  const network = labObject(context, 'network', ref)
  const record = context.db.expect('network', ref).record
  const plugged = refs(record['VIFs']).filter((vif) => context.db.get(vif)?.record['currently_attached'] === true)
  if (plugged.length > 0) throw new XapiFailure('NETWORK_CONTAINS_VIF', ...plugged)
  const pifs = refs(record['PIFs'])
  if (pifs.length > 0) throw new XapiFailure('NETWORK_CONTAINS_PIF', ...pifs)
  try {
    await context.driver.destroy(network, operationContext(context))
  } catch (error) {
    throw operationNotAllowed(error instanceof Error ? error.message : String(error))
  }
  return ''
}

/** network.create: a network of the pool with no PIF, on the lab's create_internal_network (which picks its bridge). */
async function createNetwork(context: CallContext, args: XmlRpcStruct): Promise<string> {
  const pool = [...context.driver.objectsOfType('pool')][0]
  if (pool === undefined) throw operationNotAllowed('the lab has no pool')
  const raw = args['MTU']
  const mtu = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw
  if (mtu !== undefined && typeof mtu !== 'number') throw new XapiFailure('FIELD_TYPE_ERROR', 'MTU')
  const params = { name: text(args['name_label'] ?? ''), description: text(args['name_description'] ?? ''), ...(mtu === undefined ? {} : { mtu }) }
  try {
    return createdRef(context, await context.driver.perform(pool, 'create_internal_network', params, operationContext(context)))
  } catch (error) {
    throw failure(error, String(pool['_xapiRef']), 'pool')
  }
}

/**
 * pool.create_VLAN_from_PIF as XAPI's (xapi_pool.ml, xapi_vlan.ml): a PIF
 * tagged `vlan` on the PIF's device on every host, onto the network given;
 * the tag 0 to 4094 (VLAN_TAG_INVALID [vlan]), the PIF physical
 * (PIF_IS_VLAN [pif]) and not bonded (CANNOT_ADD_VLAN_TO_BOND_SLAVE [pif]),
 * the tag not used on the device yet (PIF_VLAN_EXISTS [pif]).
 */
async function createVlan(context: CallContext, [pifRef, networkRef, tag]: readonly XmlRpcValue[]): Promise<string[]> {
  const pif = labObject(context, 'PIF', pifRef)
  const network = labObject(context, 'network', networkRef)
  const vlan = Number(tag)
  if (!Number.isSafeInteger(vlan) || vlan < 0 || vlan > 4094) throw new XapiFailure('VLAN_TAG_INVALID', text(tag))
  if (pif['physical'] !== true) throw new XapiFailure('PIF_IS_VLAN', text(pifRef))
  if (pif['isBondSlave'] === true || pif['isBondMaster'] === true) throw new XapiFailure('CANNOT_ADD_VLAN_TO_BOND_SLAVE', text(pifRef))
  const tagged = (candidate: XoRecord | undefined): boolean => candidate !== undefined && candidate['device'] === pif['device'] && candidate['vlan'] === vlan
  if ([...context.driver.objectsOfType('PIF')].some(tagged)) throw new XapiFailure('PIF_VLAN_EXISTS', text(pifRef))
  try {
    await context.driver.createVlan(network, pif.id, vlan, operationContext(context))
  } catch (error) {
    throw failure(error, text(pifRef), 'PIF')
  }
  const pifs = context.driver.getObject(network.id)?.['PIFs']
  return (Array.isArray(pifs) ? pifs : []).map((id) => context.driver.getObject(String(id))).filter(tagged).map((record) => String(record?.['_xapiRef']))
}

/** pool.management_reconfigure: every host's management interface moves to its PIF on the network, which needs an address (PIF_HAS_NO_NETWORK_CONFIGURATION [pif]). */
async function managementReconfigure(context: CallContext, networkRef: XmlRpcValue | undefined): Promise<string> {
  const network = labObject(context, 'network', networkRef)
  const pool = [...context.driver.objectsOfType('pool')][0]
  if (pool === undefined) throw operationNotAllowed('the lab has no pool')
  for (const id of refs(network['PIFs'])) {
    const pif = context.driver.getObject(id)
    if (pif?.['mode'] === 'None') throw new XapiFailure('PIF_HAS_NO_NETWORK_CONFIGURATION', String(pif['_xapiRef']))
  }
  try {
    await context.driver.perform(pool, 'management_reconfigure', { network: network.id }, operationContext(context))
  } catch (error) {
    throw failure(error, text(networkRef), 'network')
  }
  return ''
}

/** network.add_purpose: kept over the lab's network, which models NBD as a flag of its own. */
async function addPurpose(context: CallContext, ref: string, value: XmlRpcValue | undefined): Promise<string> {
  const current = context.db.expect('network', ref).record['purpose']
  const purposes = Array.isArray(current) ? current.map(text) : []
  if (!purposes.includes(text(value))) await setField(context, 'network', ref, 'purpose', [...purposes, text(value)])
  return ''
}

/**
 * Bond.create as XAPI's (xapi_bond.ml): a bond of one host's PIFs on the
 * network, two or more (PIF_BOND_NEEDS_MORE_MEMBERS), all of one host
 * (PIF_CANNOT_BOND_CROSS_HOST), physical (PIF_IS_VLAN [pif]) and bonded to
 * nothing yet (PIF_ALREADY_BONDED [pif]). The MAC and the mode are taken
 * and not kept: the lab does not model them.
 */
async function createBond(context: CallContext, [networkRef, members]: readonly XmlRpcValue[]): Promise<string> {
  const network = labObject(context, 'network', networkRef)
  const pifs = (Array.isArray(members) ? members : []).map((ref) => ({ ref: text(ref), pif: labObject(context, 'PIF', ref) }))
  if (pifs.length < 2) throw new XapiFailure('PIF_BOND_NEEDS_MORE_MEMBERS')
  if (new Set(pifs.map(({ pif }) => pif['$host'])).size > 1) throw new XapiFailure('PIF_CANNOT_BOND_CROSS_HOST')
  for (const { ref, pif } of pifs) {
    if (pif['physical'] !== true) throw new XapiFailure('PIF_IS_VLAN', ref)
    if (pif['isBondSlave'] === true || pif['isBondMaster'] === true) throw new XapiFailure('PIF_ALREADY_BONDED', ref)
  }
  try {
    await context.driver.createBond(network, pifs.map(({ pif }) => pif.id), operationContext(context))
  } catch (error) {
    throw failure(error, text(networkRef), 'network')
  }
  const [first] = pifs
  const master = context.driver.getObject(String(context.driver.getObject(String(first?.pif.id))?.['bondMaster']))
  if (master === undefined) throw new XapiFailure('INTERNAL_ERROR', 'the bond was not made')
  return bondRef(master)
}

export const networkHandlers: Readonly<Record<string, Explicit>> = withAsync({
  'Bond.create': (context, args) => createBond(context, args),
  'network.create': (context, [args]) => createNetwork(context, (args ?? {}) as XmlRpcStruct),
  'network.destroy': (context, [ref]) => destroyNetwork(context, text(ref)),
  'network.add_purpose': (context, [ref, value]) => addPurpose(context, text(ref), value),
  'pool.create_VLAN_from_PIF': (context, args) => createVlan(context, args),
  'pool.management_reconfigure': (context, [network]) => managementReconfigure(context, network),
})
