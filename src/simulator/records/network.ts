import type { XoRecord } from '../../driver/types.js'
import { NULL_REF } from '../../xapi/datamodel/index.js'
import { bool, common, derivedRef, derivedUuid, num, refs, str, stringMap, strings, type RecordContext, type XapiObject } from './context.js'

export function networkObject(network: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(network)
  return {
    cls: 'network',
    ref,
    uuid,
    fields: {
      uuid,
      name_label: str(network, 'name_label'),
      name_description: str(network, 'name_description'),
      current_operations: stringMap(network['current_operations']),
      VIFs: refs(context, network['VIFs']),
      PIFs: refs(context, network['PIFs']),
      MTU: num(network, 'MTU', 1500),
      other_config: { ...stringMap(network['other_config']), ...(bool(network, 'automatic') ? { automatic: 'true' } : {}) },
      bridge: str(network, 'bridge'),
      managed: true,
      tags: strings(network['tags']),
      default_locking_mode: bool(network, 'defaultIsLocked') ? 'disabled' : 'unlocked',
      purpose: [...(bool(network, 'nbd') ? ['nbd'] : []), ...(bool(network, 'insecureNbd') ? ['insecure_nbd'] : [])],
    },
  }
}

/** A bond's ref, derived from its master PIF's uuid: the lab keeps a bond as its master PIF's `bondSlaves`. */
export const bondRef = (master: XoRecord): string => derivedRef(common(master).uuid, 'Bond')

/** A PIF, with the Bond it is the master of (XAPI's Bond: master, slaves, mode). */
export function pifObjects(pif: XoRecord, context: RecordContext): XapiObject[] {
  const own = pifObject(pif, context)
  if (!bool(pif, 'isBondMaster')) return [own]
  const { uuid } = common(pif)
  const bond: XapiObject = {
    cls: 'Bond',
    ref: bondRef(pif),
    uuid: derivedUuid(uuid, 'Bond'),
    fields: {
      uuid: derivedUuid(uuid, 'Bond'),
      master: own.ref,
      slaves: refs(context, pif['bondSlaves']),
      primary_slave: refs(context, pif['bondSlaves'])[0] ?? NULL_REF,
      // The lab does not keep a bond's mode: XAPI's default.
      mode: 'balance-slb',
      properties: {},
      other_config: {},
      links_up: strings(pif['bondSlaves']).length,
      auto_update_mac: true,
    },
  }
  return [own, bond]
}

function pifObject(pif: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(pif)
  const master = bool(pif, 'isBondSlave') ? context.object(pif['bondMaster']) : undefined
  return {
    cls: 'PIF',
    ref,
    uuid,
    fields: {
      uuid,
      device: str(pif, 'device'),
      network: context.ref(pif['$network']),
      host: context.ref(pif['$host']),
      MAC: str(pif, 'mac'),
      MTU: num(pif, 'mtu', 1500),
      VLAN: num(pif, 'vlan', -1),
      physical: bool(pif, 'physical'),
      currently_attached: bool(pif, 'attached'),
      ip_configuration_mode: str(pif, 'mode', 'None'),
      IP: str(pif, 'ip'),
      netmask: str(pif, 'netmask'),
      gateway: str(pif, 'gateway'),
      DNS: str(pif, 'dns'),
      management: bool(pif, 'management'),
      disallow_unplug: bool(pif, 'disallowUnplug'),
      ipv6_configuration_mode: str(pif, 'ipv6Mode', 'None'),
      IPv6: strings(pif['ipv6']),
      primary_address_type: str(pif, 'primaryAddressType', 'IPv4'),
      bond_master_of: bool(pif, 'isBondMaster') ? [bondRef(pif)] : [],
      bond_slave_of: master === undefined ? NULL_REF : bondRef(master),
      managed: true,
      properties: {},
      other_config: {},
    },
  }
}

export function vifObject(vif: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(vif)
  return {
    cls: 'VIF',
    ref,
    uuid,
    fields: {
      uuid,
      device: str(vif, 'device'),
      network: context.ref(vif['$network']),
      VM: context.ref(vif['$VM']),
      MAC: str(vif, 'MAC'),
      MTU: num(vif, 'MTU', 1500),
      // Where the reference keeps the checksumming flag and the rate limit (xo-server's VIF setters).
      other_config: { ...stringMap(vif['other_config']), ...(vif['txChecksumming'] === false ? { 'ethtool-tx': 'false' } : {}) },
      qos_algorithm_type: typeof vif['rateLimit'] === 'number' ? 'ratelimit' : '',
      qos_algorithm_params: typeof vif['rateLimit'] === 'number' ? { kbps: String(vif['rateLimit']) } : {},
      currently_attached: bool(vif, 'attached'),
      locking_mode: str(vif, 'lockingMode', 'network_default'),
      ipv4_allowed: strings(vif['allowedIpv4Addresses']),
      ipv6_allowed: strings(vif['allowedIpv6Addresses']),
    },
  }
}
