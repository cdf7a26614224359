import { base, bool, defined, floatSeconds, ids, list, map, num, text, type Fields, type MappingContext, type XapiObject } from './context.js'

/** XO's pool record; `platform_version` is the master's. */
export function poolRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const other = map(r['other_config'])
  const cpu = map(r['cpu_info'])
  const restrictions = map(r['restrictions'])
  const master = context.object(r['master'])
  return defined({
    ...base('pool', uuid, uuid, ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    tags: list(r['tags']),
    master: context.id(r['master']),
    HA_enabled: bool(r['ha_enabled']),
    haSrs: list(r['ha_statefiles'])
      .map((vdi) => context.id(context.object(vdi)?.record['SR']))
      .filter((sr): sr is string => sr !== undefined),
    haRebootVmOnInternalShutdown: bool(r['ha_reboot_vm_on_internal_shutdown']),
    auto_poweron: other['auto_poweron'] === 'true',
    cpus: { cores: num(cpu['cpu_count']), sockets: num(cpu['socket_count']) },
    current_operations: map(r['current_operations']),
    migrationCompression: bool(r['migration_compression']),
    otherConfig: other,
    platform_version: master === undefined ? undefined : map(master.record['software_version'])['platform_version'],
    zstdSupported: restrictions['restrict_zstd_export'] !== 'true',
    vtpmSupported: restrictions['restrict_vtpm'] !== 'true',
    default_SR: context.id(r['default_SR']),
    crashDumpSr: context.id(r['crash_dump_SR']),
    suspendSr: context.id(r['suspend_image_SR']),
  })
}

/** XO's host record: memory and liveness from its host_metrics. */
export function hostRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  const metrics = context.object(r['metrics'])?.record ?? {}
  const version = map(r['software_version'])
  const license = map(r['license_params'])
  const other = map(r['other_config'])
  const cpu = map(r['cpu_info'])
  const chipset = map(r['chipset_info'])
  const total = num(metrics['memory_total'])
  const pifs = ids(context, r['PIFs'])
  const pcis = ids(context, r['PCIs'])
  const pgpus = ids(context, r['PGPUs'])
  return defined({
    ...base('host', uuid, uuid, ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    tags: list(r['tags']),
    hostname: text(r['hostname']),
    address: text(r['address']),
    iscsiIqn: text(r['iscsi_iqn']),
    version: version['product_version'] ?? '',
    productBrand: version['product_brand'] ?? '',
    build: version['build_number'] ?? '',
    license_params: license,
    license_server: map(r['license_server']),
    license_expiry: floatSeconds(license['expiry']),
    zstdSupported: license['restrict_zstd_export'] !== 'true',
    // Served by classes and calls not fetched yet (Certificate, pool updates): empty rather than guessed.
    supplementalPacks: [],
    patches: [],
    certificates: [],
    enabled: bool(r['enabled']),
    power_state: metrics['live'] === true ? 'Running' : 'Halted',
    powerOnMode: text(r['power_on_mode']),
    current_operations: map(r['current_operations']),
    rebootRequired: false,
    startTime: floatSeconds(other['boot_time']),
    agentStartTime: floatSeconds(other['agent_start_time']),
    multipathing: bool(r['multipathing']),
    logging: map(r['logging']),
    otherConfig: other,
    memory: { size: total, usage: total - num(metrics['memory_free']) },
    cpus: { cores: num(cpu['cpu_count']), sockets: num(cpu['socket_count']) },
    CPUs: cpu,
    bios_strings: map(r['bios_strings']),
    chipset_info: 'iommu' in chipset ? { iommu: chipset['iommu'] === 'true' } : {},
    hvmCapable: list(r['capabilities']).some((capability) => capability.startsWith('hvm')),
    residentVms: ids(context, r['resident_VMs']),
    PIFs: pifs,
    $PIFs: pifs,
    PCIs: pcis,
    $PCIs: pcis,
    PGPUs: pgpus,
    $PGPUs: pgpus,
    $PBDs: ids(context, r['PBDs']),
    controlDomain: context.id(r['control_domain']),
  })
}
