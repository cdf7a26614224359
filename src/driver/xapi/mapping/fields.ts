import type { XapiRecord } from './context.js'

/**
 * The fields of each watched class that the mapping reads, of the object
 * itself or of another through the context (a VM reads its SR's `shared`,
 * a pool its master's `software_version`), and `uuid` (messages name their
 * object by it). The index keeps only these: a whole record of a 10,000-VM
 * pool held twice the live heap of Keel on the lab driver (issue 28).
 * test/driver/xapi-mapped-fields.test.ts holds the lists against what the
 * mappers read.
 */
const MAPPED: Readonly<Record<string, readonly string[]>> = {
  pool: [
    'uuid', 'name_label', 'name_description', 'tags', 'master', 'other_config', 'cpu_info', 'restrictions', 'ha_enabled', 'ha_statefiles',
    'ha_reboot_vm_on_internal_shutdown', 'current_operations', 'migration_compression', 'default_SR', 'crash_dump_SR', 'suspend_image_SR',
  ],
  host: [
    'uuid', 'name_label', 'name_description', 'tags', 'metrics', 'software_version', 'license_params', 'license_server', 'other_config', 'cpu_info',
    'chipset_info', 'hostname', 'address', 'iscsi_iqn', 'enabled', 'power_on_mode', 'current_operations', 'multipathing', 'logging', 'bios_strings',
    'capabilities', 'resident_VMs', 'PIFs', 'PCIs', 'PGPUs', 'PBDs', 'control_domain',
  ],
  host_metrics: ['uuid', 'live', 'memory_total', 'memory_free'],
  VM: [
    'uuid', 'name_label', 'name_description', 'tags', 'is_a_snapshot', 'is_a_template', 'is_control_domain', 'is_default_template', 'power_state',
    'resident_on', 'VBDs', 'metrics', 'guest_metrics', 'other_config', 'platform', 'domain_type', 'memory_dynamic_min', 'memory_dynamic_max',
    'memory_static_min', 'memory_static_max', 'memory_target', 'current_operations', 'blocked_operations', 'ha_restart_priority', 'start_delay',
    'VCPUs_max', 'VCPUs_at_startup', 'HVM_boot_params', 'bios_strings', 'has_vendor_device', 'xenstore_data', 'snapshots', 'VIFs', 'VTPMs', 'VGPUs',
    'PV_args', 'affinity', 'parent', 'snapshot_time', 'snapshot_of',
  ],
  VM_metrics: ['uuid', 'start_time', 'VCPUs_number', 'memory_actual', 'nested_virt', 'install_time'],
  VM_guest_metrics: ['uuid', 'live', 'PV_drivers_detected', 'PV_drivers_version', 'PV_drivers_up_to_date', 'networks', 'os_version'],
  SR: [
    'uuid', 'name_label', 'name_description', 'tags', 'shared', 'PBDs', 'VDIs', 'sm_config', 'type', 'content_type', 'physical_size',
    'physical_utilisation', 'virtual_allocation', 'current_operations', 'other_config',
  ],
  PBD: ['uuid', 'currently_attached', 'host', 'SR', 'device_config', 'other_config'],
  VDI: [
    'uuid', 'name_label', 'name_description', 'tags', 'is_a_snapshot', 'physical_utilisation', 'virtual_size', 'type', 'cbt_enabled', 'missing',
    'sm_config', 'snapshots', 'current_operations', 'other_config', 'SR', 'VBDs', 'snapshot_time', 'snapshot_of',
  ],
  VBD: ['uuid', 'currently_attached', 'bootable', 'device', 'type', 'userdevice', 'mode', 'VDI', 'VM'],
  SM: ['uuid', 'name_label', 'name_description', 'type', 'vendor', 'configuration', 'features', 'driver_filename', 'required_cluster_stack', 'supported_image_formats'],
  network: [
    'uuid', 'name_label', 'name_description', 'tags', 'bridge', 'MTU', 'other_config', 'purpose', 'default_locking_mode', 'PIFs', 'VIFs', 'current_operations',
  ],
  PIF: [
    'uuid', 'device', 'MAC', 'MTU', 'VLAN', 'IP', 'netmask', 'gateway', 'DNS', 'IPv6', 'ip_configuration_mode', 'ipv6_configuration_mode',
    'primary_address_type', 'currently_attached', 'management', 'physical', 'disallow_unplug', 'bond_master_of', 'bond_slave_of', 'host', 'network',
  ],
  Bond: ['uuid', 'master', 'slaves'],
  VIF: [
    'uuid', 'device', 'MAC', 'MTU', 'currently_attached', 'locking_mode', 'ipv4_allowed', 'ipv6_allowed', 'other_config', 'qos_algorithm_type',
    'qos_algorithm_params', 'network', 'VM',
  ],
  message: ['uuid', 'obj_uuid', 'name', 'body', 'timestamp'],
  GPU_group: [
    'uuid', 'name_label', 'name_description', 'allocation_algorithm', 'enabled_VGPU_types', 'supported_VGPU_types', 'GPU_types', 'other_config', 'PGPUs', 'VGPUs',
  ],
}

/**
 * For each class, an object with its fields, all undefined: a record is a copy of it with values set.
 * Built by adding its fields one by one, a VM's record turned to dictionary mode in V8 (1.6 KB
 * against 0.35 KB), its fields no longer in the object.
 */
const TEMPLATES = new Map(Object.entries(MAPPED).map(([cls, fields]) => [cls, { fields, template: Object.fromEntries(fields.map((field) => [field, undefined])) }]))

/** The fields the mapping reads of a record of `cls`, undefined where it has none (the whole record for a class it does not list). */
export function mappedFields(cls: string, record: XapiRecord): XapiRecord {
  const kind = TEMPLATES.get(cls)
  if (kind === undefined) return record
  const kept: Record<string, unknown> = { ...kind.template }
  for (const field of kind.fields) kept[field] = record[field]
  return kept
}

/** The classes whose fields are listed, for the test that holds the lists against the mappers. */
export const MAPPED_CLASSES: readonly string[] = Object.keys(MAPPED)
