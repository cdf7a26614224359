import type { XoRecord } from '../../driver/types.js'
import { bool, common, object, derivedRef, derivedUuid, refs, str, stringMap, strings, type RecordContext, type XapiObject } from './context.js'


export function poolObject(pool: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(pool)
  const cpus = object(pool['cpus'])
  return {
    cls: 'pool',
    ref,
    uuid,
    fields: {
      uuid,
      name_label: str(pool, 'name_label'),
      name_description: str(pool, 'name_description'),
      master: context.ref(pool['master']),
      default_SR: context.ref(pool['default_SR']),
      suspend_image_SR: context.ref(pool['suspendSr']),
      crash_dump_SR: context.ref(pool['crashDumpSr']),
      other_config: { ...stringMap(pool['otherConfig']), ...(bool(pool, 'auto_poweron') ? { auto_poweron: 'true' } : {}) },
      ha_enabled: bool(pool, 'HA_enabled'),
      tags: strings(pool['tags']),
      // XO reads zstd and vTPM support from these restrictions.
      restrictions: { restrict_zstd_export: String(!bool(pool, 'zstdSupported', true)), restrict_vtpm: String(!bool(pool, 'vtpmSupported', true)) },
      current_operations: stringMap(pool['current_operations']),
      cpu_info: { cpu_count: String(cpus['cores'] ?? 0), socket_count: String(cpus['sockets'] ?? 0) },
      migration_compression: bool(pool, 'migrationCompression'),
    },
  }
}

/** A host and its host_metrics (memory and liveness, which XO reads from there). */
export function hostObjects(host: XoRecord, context: RecordContext): XapiObject[] {
  const { uuid, ref } = common(host)
  const memory = object(host['memory'])
  const total = typeof memory['size'] === 'number' ? memory['size'] : 0
  const used = typeof memory['usage'] === 'number' ? memory['usage'] : 0
  const cpus = object(host['cpus'])
  const metricsRef = derivedRef(uuid, 'host_metrics')
  const chipset = stringMap(host['chipset_info'])
  const fields = {
    uuid,
    name_label: str(host, 'name_label'),
    name_description: str(host, 'name_description'),
    API_version_major: 2,
    API_version_minor: 21,
    API_version_vendor: 'XenSource',
    enabled: bool(host, 'enabled'),
    software_version: {
      product_version: str(host, 'version'),
      product_brand: str(host, 'productBrand'),
      build_number: str(host, 'build'),
      platform_version: context.object(host['$pool'])?.['platform_version'] === undefined ? '' : String(context.object(host['$pool'])?.['platform_version']),
    },
    other_config: stringMap(host['otherConfig']),
    capabilities: bool(host, 'hvmCapable') ? ['xen-3.0-x86_64', 'hvm-3.0-x86_32', 'hvm-3.0-x86_64'] : ['xen-3.0-x86_64'],
    resident_VMs: refs(context, host['residentVms']),
    logging: stringMap(host['logging']),
    PIFs: refs(context, host['PIFs']),
    PBDs: refs(context, host['$PBDs']),
    PCIs: refs(context, host['PCIs']),
    PGPUs: refs(context, host['PGPUs']),
    cpu_info: { ...stringMap(host['CPUs']), cpu_count: String(cpus['cores'] ?? 0), socket_count: String(cpus['sockets'] ?? 0) },
    hostname: str(host, 'hostname'),
    address: str(host, 'address'),
    metrics: metricsRef,
    license_params: stringMap(host['license_params']),
    license_server: stringMap(host['license_server']),
    bios_strings: stringMap(host['bios_strings']),
    power_on_mode: str(host, 'powerOnMode'),
    chipset_info: chipset,
    control_domain: context.ref(host['controlDomain']),
    iscsi_iqn: str(host, 'iscsiIqn'),
    multipathing: bool(host, 'multipathing'),
    tags: strings(host['tags']),
    current_operations: stringMap(host['current_operations']),
  }
  const metrics: XapiObject = {
    cls: 'host_metrics',
    ref: metricsRef,
    uuid: derivedUuid(uuid, 'host_metrics'),
    fields: { uuid: derivedUuid(uuid, 'host_metrics'), memory_total: total, memory_free: total - used, live: str(host, 'power_state') === 'Running' },
  }
  return [{ cls: 'host', ref, uuid, fields }, metrics]
}
