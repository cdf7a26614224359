import type { XoRecord } from '../../driver/types.js'
import { NULL_REF } from '../../xapi/datamodel/index.js'
import { bool, common, object, derivedRef, derivedUuid, double, num, refs, seconds, str, stringMap, strings, type RecordContext, type XapiObject } from './context.js'

// The lab keeps a suspended VM on its host (host.residentVms lists it); XAPI would clear resident_on. The lab's view wins, so both
// ends of the link agree.
const resident = (powerState: string): boolean => powerState === 'Running' || powerState === 'Paused' || powerState === 'Suspended'
const live = (powerState: string): boolean => powerState === 'Running' || powerState === 'Paused'

const pair = (value: unknown): [number, number] => {
  const [low, high] = Array.isArray(value) ? value : []
  return [typeof low === 'number' ? low : 0, typeof high === 'number' ? high : 0]
}


/** `8.3.0-1` as the guest agent reports it: major, minor, micro and build apart. */
function driversVersion(version: string): Record<string, string> {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?(?:-(\w+))?$/.exec(version)
  if (match === null) return {}
  const [, major = '', minor = '', micro, build] = match
  return { major, minor, ...(micro === undefined ? {} : { micro }), ...(build === undefined ? {} : { build }) }
}

/**
 * A VM, snapshot, template or control domain, with its VM_metrics and
 * VM_guest_metrics (XO folds those into its VM record; shared notes on xapi §2.6).
 */
export function vmObjects(vm: XoRecord, context: RecordContext): XapiObject[] {
  const { uuid, ref } = common(vm)
  const powerState = str(vm, 'power_state', 'Halted')
  const running = live(powerState)
  const memory = object(vm['memory'])
  const [staticMin, staticMax] = pair(memory['static'])
  const [dynamicMin, dynamicMax] = pair(memory['dynamic'])
  const size = typeof memory['size'] === 'number' ? memory['size'] : dynamicMax
  const cpus = object(vm['CPUs'])
  const boot = stringMap(vm['boot'])
  const mode = str(vm, 'virtualizationMode', 'hvm')
  const container = context.object(vm['$container'])
  const metricsRef = derivedRef(uuid, 'VM_metrics')
  const guestRef = derivedRef(uuid, 'VM_guest_metrics')
  const platform: Record<string, string> = {
    viridian: String(bool(vm, 'viridian')),
    secureboot: String(bool(vm, 'secureBoot')),
    'exp-nested-hvm': String(bool(vm, 'expNestedHvm')),
    ...(vm['vga'] === undefined ? {} : { vga: str(vm, 'vga') }),
    ...(vm['videoram'] === undefined ? {} : { videoram: str(vm, 'videoram') }),
  }
  const fields = {
    uuid,
    name_label: str(vm, 'name_label'),
    name_description: str(vm, 'name_description'),
    power_state: powerState,
    user_version: 1,
    is_a_template: vm.type === 'VM-template' || vm.type === 'VM-snapshot',
    is_default_template: bool(vm, 'isDefaultTemplate'),
    is_a_snapshot: vm.type === 'VM-snapshot',
    is_control_domain: vm.type === 'VM-controller',
    resident_on: resident(powerState) && container?.type === 'host' ? context.ref(container.id) : NULL_REF,
    affinity: context.ref(vm['affinityHost']),
    memory_static_min: staticMin,
    memory_static_max: staticMax,
    memory_dynamic_min: dynamicMin,
    memory_dynamic_max: dynamicMax,
    memory_target: running ? size : 0,
    VCPUs_max: typeof cpus['max'] === 'number' ? cpus['max'] : 1,
    VCPUs_at_startup: typeof cpus['number'] === 'number' ? cpus['number'] : 1,
    actions_after_shutdown: 'destroy',
    actions_after_reboot: 'restart',
    actions_after_crash: 'restart',
    VIFs: refs(context, vm['VIFs']),
    VBDs: refs(context, vm['$VBDs']),
    VTPMs: refs(context, vm['VTPMs']),
    VGPUs: refs(context, vm['$VGPUs']),
    PV_args: str(vm, 'PV_args'),
    HVM_boot_policy: mode === 'hvm' ? 'BIOS order' : '',
    HVM_boot_params: mode === 'hvm' ? boot : {},
    HVM_shadow_multiplier: double(1),
    platform,
    other_config: stringMap(vm['other']),
    domid: running ? (vm.type === 'VM-controller' ? 0 : 1 + (parseInt(uuid.slice(0, 4), 16) % 1000)) : -1,
    domarch: running ? 'x64' : '',
    metrics: metricsRef,
    guest_metrics: guestRef,
    xenstore_data: stringMap(vm['xenStoreData']),
    ha_restart_priority: str(vm, 'high_availability'),
    snapshot_of: context.ref(vm['$snapshot_of']),
    snapshots: refs(context, vm['snapshots']),
    snapshot_time: seconds(vm['snapshot_time']),
    tags: strings(vm['tags']),
    blocked_operations: stringMap(vm['blockedOperations']),
    current_operations: stringMap(vm['current_operations']),
    bios_strings: stringMap(vm['bios_strings']),
    start_delay: num(vm, 'startDelay'),
    has_vendor_device: bool(vm, 'hasVendorDevice'),
    domain_type: mode,
  }
  const os = stringMap(vm['os_version'])
  const metrics: XapiObject = {
    cls: 'VM_metrics',
    ref: metricsRef,
    uuid: derivedUuid(uuid, 'VM_metrics'),
    fields: {
      uuid: derivedUuid(uuid, 'VM_metrics'),
      memory_actual: running ? (typeof memory['usage'] === 'number' ? memory['usage'] : size) : 0,
      VCPUs_number: running ? fields.VCPUs_at_startup : 0,
      start_time: seconds(vm['startTime']),
      install_time: seconds(vm['installTime']),
      hvm: mode === 'hvm',
      nested_virt: bool(vm, 'isNestedVirtEnabled'),
      current_domain_type: running ? mode : 'unspecified',
    },
  }
  const guest: XapiObject = {
    cls: 'VM_guest_metrics',
    ref: guestRef,
    uuid: derivedUuid(uuid, 'VM_guest_metrics'),
    fields: {
      uuid: derivedUuid(uuid, 'VM_guest_metrics'),
      os_version: os,
      PV_drivers_version: driversVersion(str(vm, 'pvDriversVersion')),
      PV_drivers_up_to_date: bool(vm, 'pvDriversUpToDate'),
      PV_drivers_detected: bool(vm, 'pvDriversDetected'),
      networks: stringMap(vm['addresses']),
      live: bool(vm, 'managementAgentDetected'),
    },
  }
  return [{ cls: 'VM', ref, uuid, fields }, metrics, guest]
}
