import { isRef, base, bool, defined, ids, list, map, num, text, type Fields, type MappingContext, type XapiObject } from './context.js'

export function networkRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const other = map(r['other_config'])
  const purpose = list(r['purpose'])
  return {
    ...base('network', uuid, uuid, ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    tags: list(r['tags']),
    bridge: text(r['bridge']),
    MTU: num(r['MTU']),
    automatic: other['automatic'] === 'true',
    defaultIsLocked: r['default_locking_mode'] === 'disabled',
    nbd: purpose.includes('nbd'),
    insecureNbd: purpose.includes('insecure_nbd'),
    isBonded: list(r['PIFs']).some((pif) => list(context.object(pif)?.record['bond_master_of']).length > 0),
    current_operations: map(r['current_operations']),
    other_config: other,
    PIFs: ids(context, r['PIFs']),
    VIFs: ids(context, r['VIFs']),
  }
}

export function pifRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const attached = bool(r['currently_attached'])
  // XO reads a bond's members and master through its Bond record.
  const bond = context.object(list(r['bond_master_of'])[0])
  const bondOf = isRef(r['bond_slave_of']) ? context.object(r['bond_slave_of']) : undefined
  return defined({
    ...base('PIF', uuid, uuid, ref, context.poolId),
    device: text(r['device']),
    mac: text(r['MAC']),
    mtu: num(r['MTU']),
    vlan: num(r['VLAN']),
    ip: text(r['IP']),
    netmask: text(r['netmask']),
    gateway: text(r['gateway']),
    dns: text(r['DNS']),
    ipv6: list(r['IPv6']),
    mode: text(r['ip_configuration_mode']),
    ipv6Mode: text(r['ipv6_configuration_mode']),
    primaryAddressType: text(r['primary_address_type']),
    attached,
    // PIF_metrics are not fetched: a plugged PIF is taken to have its carrier.
    carrier: attached,
    management: bool(r['management']),
    physical: bool(r['physical']),
    disallowUnplug: bool(r['disallow_unplug']),
    isBondMaster: list(r['bond_master_of']).length > 0,
    isBondSlave: isRef(r['bond_slave_of']),
    bondSlaves: bond === undefined ? undefined : ids(context, bond.record['slaves']),
    bondMaster: bondOf === undefined ? undefined : context.id(bondOf.record['master']),
    $host: context.id(r['host']),
    $network: context.id(r['network']),
  })
}

/** The reference's rate limit: the `ratelimit` QoS algorithm's `kbps`. */
function rateLimit(r: XapiObject['record']): number | undefined {
  const kbps = map(r['qos_algorithm_params'])['kbps']
  return r['qos_algorithm_type'] === 'ratelimit' && kbps !== undefined && /^\d+$/.test(kbps) ? Number(kbps) : undefined
}

export function vifRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const other = map(r['other_config'])
  return defined({
    ...base('VIF', uuid, uuid, ref, context.poolId),
    device: text(r['device']),
    MAC: text(r['MAC']),
    MTU: num(r['MTU']),
    attached: bool(r['currently_attached']),
    lockingMode: text(r['locking_mode']),
    allowedIpv4Addresses: list(r['ipv4_allowed']),
    allowedIpv6Addresses: list(r['ipv6_allowed']),
    txChecksumming: other['ethtool-tx'] !== 'false',
    rateLimit: rateLimit(r),
    other_config: other,
    $network: context.id(r['network']),
    $VM: context.id(r['VM']),
  })
}
