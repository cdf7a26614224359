import { base, bool, defined, ids, list, map, num, seconds, text, type Fields, type MappingContext, type XapiObject } from './context.js'

/** A local SR's host: the host of its (only) PBD. */
function srContainer(r: Readonly<Record<string, unknown>>, context: MappingContext): string | undefined {
  if (bool(r['shared'])) return context.poolId
  return context.id(context.object(list(r['PBDs'])[0])?.record['host']) ?? context.poolId
}

export function srRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const { allocation, ...smConfig } = map(r['sm_config'])
  return defined({
    ...base('SR', uuid, uuid, ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    tags: list(r['tags']),
    SR_type: text(r['type']),
    content_type: text(r['content_type']),
    shared: bool(r['shared']),
    size: num(r['physical_size']),
    physical_usage: num(r['physical_utilisation']),
    usage: num(r['virtual_allocation']),
    allocationStrategy: allocation,
    inMaintenanceMode: false,
    current_operations: map(r['current_operations']),
    other_config: map(r['other_config']),
    // `allocation` is served as allocationStrategy (XO reads thin or thick provisioning from it).
    sm_config: smConfig,
    VDIs: ids(context, r['VDIs']),
    $PBDs: ids(context, r['PBDs']),
    $container: srContainer(r, context),
  })
}

export function vdiRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const snapshot = bool(r['is_a_snapshot'])
  const usage = num(r['physical_utilisation'])
  return defined({
    ...base(snapshot ? 'VDI-snapshot' : 'VDI', uuid, uuid, ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    tags: list(r['tags']),
    size: num(r['virtual_size']),
    usage,
    VDI_type: text(r['type']),
    cbt_enabled: bool(r['cbt_enabled']),
    missing: bool(r['missing']),
    image_format: map(r['sm_config'])['image_format'],
    snapshots: ids(context, r['snapshots']),
    current_operations: map(r['current_operations']),
    other_config: map(r['other_config']),
    $SR: context.id(r['SR']),
    $VBDs: ids(context, r['VBDs']),
    // XAPI does not sum a chain's usage: the disk's own is the closest it says.
    chainPhysicalUsage: snapshot ? undefined : usage,
    snapshot_time: snapshot ? seconds(r['snapshot_time']) : undefined,
    $snapshot_of: snapshot ? context.id(r['snapshot_of']) : undefined,
  })
}

export function vbdRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  return defined({
    ...base('VBD', uuid, uuid, ref, context.poolId),
    attached: bool(r['currently_attached']),
    bootable: bool(r['bootable']),
    device: text(r['device']),
    is_cd_drive: r['type'] === 'CD',
    position: text(r['userdevice']),
    read_only: r['mode'] === 'RO',
    VDI: context.id(r['VDI']),
    VM: context.id(r['VM']),
  })
}

export function pbdRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  return defined({
    ...base('PBD', uuid, uuid, ref, context.poolId),
    attached: bool(r['currently_attached']),
    host: context.id(r['host']),
    SR: context.id(r['SR']),
    device_config: map(r['device_config']),
    otherConfig: map(r['other_config']),
  })
}

export function smRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const features = typeof r['features'] === 'object' && r['features'] !== null ? (r['features'] as Record<string, unknown>) : {}
  return {
    ...base('SM', uuid, uuid, ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    SM_type: text(r['type']),
    vendor: text(r['vendor']),
    configuration: map(r['configuration']),
    features: Object.fromEntries(Object.entries(features).map(([key, value]) => [key, num(value)])),
    driver_filename: text(r['driver_filename']),
    required_cluster_stack: list(r['required_cluster_stack']),
    supported_image_formats: list(r['supported_image_formats']),
  }
}
