import { CREATION_KEY, decodeCreation } from '../creation.js'
import { base, bool, defined, ids, isRef, list, map, num, seconds, text, type Fields, type MappingContext, type XapiObject, type XapiRecord } from './context.js'

const RUNNING = new Set(['Running', 'Paused'])

export function vmType(r: XapiRecord): string {
  return bool(r['is_a_snapshot']) ? 'VM-snapshot' : bool(r['is_a_template']) ? 'VM-template' : bool(r['is_control_domain']) ? 'VM-controller' : 'VM'
}

/** XO's link of a default template: its UUID is the same in every pool, so its id is scoped by the pool. */
export const vmId = (r: XapiRecord, poolId: string): string => (bool(r['is_default_template']) ? `${poolId}-${text(r['uuid'])}` : text(r['uuid']))

/** `$container`: the host it resides on, else the host of a local SR holding one of its disks, else the pool. */
function container(r: XapiRecord, context: MappingContext): string {
  const resident = context.id(r['resident_on'])
  if (resident !== undefined) return resident
  for (const vbd of list(r['VBDs'])) {
    const sr = context.object(context.object(context.object(vbd)?.record['VDI'])?.record['SR'])?.record
    if (sr === undefined || bool(sr['shared'])) continue
    const host = context.id(context.object(list(sr['PBDs'])[0])?.record['host'])
    if (host !== undefined) return host
  }
  return context.poolId
}

/** `8.3.0-1` from the guest agent's major, minor, micro and build. */
function driversVersion(parts: Record<string, string>): string | undefined {
  const { major, minor, micro, build } = parts
  if (major === undefined || minor === undefined) return undefined
  return `${major}.${minor}${micro === undefined ? '' : `.${micro}`}${build === undefined ? '' : `-${build}`}`
}

/** What the guest agent reports, as XO folds VM_guest_metrics into the VM; nothing when no agent ever spoke. */
function guestFields(guest: XapiRecord | undefined): Fields {
  if (guest === undefined || !(bool(guest['live']) || bool(guest['PV_drivers_detected']))) return {}
  const parts = map(guest['PV_drivers_version'])
  const major = parts['major'] === undefined ? null : num(parts['major'])
  const minor = parts['minor'] === undefined ? null : num(parts['minor'])
  return {
    managementAgentDetected: bool(guest['live']),
    pvDriversDetected: bool(guest['PV_drivers_detected']),
    pvDriversVersion: driversVersion(parts),
    pvDriversUpToDate: bool(guest['PV_drivers_up_to_date']),
    xenTools: major === null ? false : { major, minor, version: minor === null ? major : Number(`${major}.${minor}`) },
  }
}

/** A VM, snapshot, template or control domain, with its VM_metrics and VM_guest_metrics folded in. */
export function vmRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const type = vmType(r)
  const powerState = text(r['power_state'])
  const running = RUNNING.has(powerState)
  const metrics = context.object(r['metrics'])?.record ?? {}
  const guest = context.object(r['guest_metrics'])?.record
  const other = map(r['other_config'])
  const platform = map(r['platform'])
  const mode = text(r['domain_type'])
  const dynamicMax = num(r['memory_dynamic_max'])
  const addresses = map(guest?.['networks'])
  const os = map(guest?.['os_version'])
  const mainIp = addresses['0/ipv4/0'] ?? addresses['0/ip'] ?? Object.values(addresses)[0]
  const snapshot = type === 'VM-snapshot'
  const template = type === 'VM-template'
  const installMethods = other['install-methods']
  return defined({
    ...base(type, vmId(r, context.poolId), text(r['uuid']), ref, context.poolId),
    name_label: text(r['name_label']),
    name_description: text(r['name_description']),
    power_state: powerState,
    tags: list(r['tags']),
    other,
    current_operations: map(r['current_operations']),
    blockedOperations: map(r['blocked_operations']),
    auto_poweron: other['auto_poweron'] === 'true',
    creation: decodeCreation(other[CREATION_KEY]),
    high_availability: text(r['ha_restart_priority']),
    startDelay: num(r['start_delay']),
    startTime: seconds(metrics['start_time']),
    CPUs: { max: num(r['VCPUs_max']), number: running ? num(metrics['VCPUs_number']) : num(r['VCPUs_at_startup']) },
    memory: {
      dynamic: [num(r['memory_dynamic_min']), dynamicMax],
      static: [num(r['memory_static_min']), num(r['memory_static_max'])],
      size: running ? num(r['memory_target']) : dynamicMax,
      ...(running ? { usage: num(metrics['memory_actual']) } : {}),
    },
    boot: map(r['HVM_boot_params']),
    bios_strings: map(r['bios_strings']),
    virtualizationMode: mode,
    viridian: platform['viridian'] === 'true',
    secureBoot: platform['secureboot'] === 'true',
    isFirmwareSupported: true,
    expNestedHvm: platform['exp-nested-hvm'] === 'true',
    isNestedVirtEnabled: bool(metrics['nested_virt']),
    hasVendorDevice: bool(r['has_vendor_device']),
    needsVtpm: platform['vtpm'] === 'true',
    addresses,
    os_version: Object.keys(os).length === 0 ? null : os,
    xenStoreData: map(r['xenstore_data']),
    snapshots: ids(context, r['snapshots']),
    VIFs: ids(context, r['VIFs']),
    VTPMs: ids(context, r['VTPMs']),
    VGPUs: ids(context, r['VGPUs']),
    $VGPUs: ids(context, r['VGPUs']),
    $VBDs: ids(context, r['VBDs']),
    installTime: seconds(metrics['install_time']),
    vga: platform['vga'],
    videoram: platform['videoram'] === undefined ? undefined : num(platform['videoram']),
    PV_args: mode === 'hvm' ? undefined : text(r['PV_args']),
    affinityHost: context.id(r['affinity']),
    parent: isRef(r['parent']) ? context.id(r['parent']) : undefined,
    $container: container(r, context),
    ...guestFields(guest),
    mainIpAddress: mainIp,
    ...(snapshot ? { snapshot_time: seconds(r['snapshot_time']), $snapshot_of: context.id(r['snapshot_of']) } : {}),
    ...(template
      ? {
          isDefaultTemplate: bool(r['is_default_template']),
          template_info: defined({ arch: other['install-arch'], disks: [], install_methods: installMethods === undefined || installMethods === '' ? [] : installMethods.split(',') }),
        }
      : {}),
  })
}
