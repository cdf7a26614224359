import type { XvaDescription } from '../formats/xva/description.js'

/**
 * The XAPI-style records a delta archive's metadata holds (snake_case fields,
 * `OpaqueRef:` references; notes reference-backups.md §2), from and back to
 * what Keel carries of a VM through an export (an XVA description).
 */

type XapiRecord = Record<string, unknown>

export interface XapiVmRecords {
  readonly vm: XapiRecord
  readonly vdis: Record<string, XapiRecord>
  readonly vbds: Record<string, XapiRecord>
  readonly vifs: Record<string, XapiRecord>
  /** VDI ref → the live disk's uuid (the folder its VHDs go to) */
  readonly liveVdis: Record<string, string>
}

const ref = (uuid: string): string => `OpaqueRef:${uuid}`

export function vmRecord(description: XvaDescription, powerState = 'Halted'): XapiRecord {
  const { vm } = description
  return {
    uuid: vm.uuid,
    name_label: vm.name_label,
    name_description: vm.name_description,
    power_state: powerState,
    memory_static_max: vm.memory_static_max,
    memory_static_min: vm.memory_static_min,
    memory_dynamic_max: vm.memory_dynamic_max,
    memory_dynamic_min: vm.memory_dynamic_min,
    VCPUs_max: vm.VCPUs_max,
    VCPUs_at_startup: vm.VCPUs_at_startup,
    is_a_template: vm.is_a_template,
    is_a_snapshot: false,
    tags: [...vm.tags],
    other_config: { ...vm.other_config },
    suspend_VDI: 'OpaqueRef:NULL',
  }
}

/**
 * Records of a snapshot `description` of a VM whose disks are `liveVdis`
 * (by position): VDIs under refs of the snapshot disks, with the live
 * disk's uuid in `$snapshot_of$uuid`, and their VBDs and VIFs.
 */
export function toXapiRecords(description: XvaDescription, liveVdis: readonly string[], srUuid: string, vmUuid: string): XapiVmRecords {
  const vmRef = ref(vmUuid)
  const vdis: Record<string, XapiRecord> = {}
  const vbds: Record<string, XapiRecord> = {}
  const vifs: Record<string, XapiRecord> = {}
  const live: Record<string, string> = {}
  description.disks.forEach((disk, i) => {
    const vdiRef = ref(disk.uuid)
    const liveUuid = liveVdis[i] ?? disk.uuid
    live[vdiRef] = liveUuid
    vdis[vdiRef] = {
      uuid: disk.uuid,
      name_label: disk.name_label,
      name_description: disk.name_description,
      virtual_size: disk.virtual_size,
      type: 'user',
      is_a_snapshot: true,
      other_config: { 'xo:backup:vm': vmUuid },
      $snapshot_of$uuid: liveUuid,
      $SR$uuid: srUuid,
    }
    vbds[ref(`vbd-${disk.uuid}`)] = {
      uuid: `vbd-${disk.uuid}`,
      VDI: vdiRef,
      VM: vmRef,
      device: disk.device,
      userdevice: disk.userdevice,
      bootable: disk.bootable,
      mode: disk.mode,
      type: 'Disk',
    }
  })
  for (const vif of description.vifs) {
    vifs[ref(vif.uuid)] = { uuid: vif.uuid, device: vif.device, MAC: vif.MAC, MTU: vif.MTU, VM: vmRef, $network$name_label: vif.network_name_label }
  }
  return { vm: vmRecord(description), vdis, vbds, vifs, liveVdis: live }
}

const text = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback)
const num = (value: unknown): number => (typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : 0)
const bool = (value: unknown): boolean => value === true || value === 1 || value === 'true'

/**
 * What a delta archive describes, back as an XVA description: the VM from
 * `vmSnapshot`, disks in the order of their VBDs' userdevice, VIFs by device.
 * Returns the VDI refs in the same order as the disks.
 */
export function fromXapiRecords(metadata: { vmSnapshot: XapiRecord; vdis: Record<string, XapiRecord>; vbds: Record<string, XapiRecord>; vifs: Record<string, XapiRecord> }): { description: XvaDescription; vdiRefs: string[] } {
  const vm = metadata.vmSnapshot
  const drives = Object.values(metadata.vbds)
    .filter((vbd) => text(vbd['type'], 'Disk') === 'Disk' && typeof vbd['VDI'] === 'string' && metadata.vdis[vbd['VDI']] !== undefined)
    .sort((a, b) => num(a['userdevice']) - num(b['userdevice']))
  const vdiRefs = drives.map((vbd) => vbd['VDI'] as string)
  const description: XvaDescription = {
    vm: {
      uuid: text(vm['uuid']),
      name_label: text(vm['name_label']),
      name_description: text(vm['name_description']),
      memory_static_max: num(vm['memory_static_max']),
      memory_static_min: num(vm['memory_static_min']),
      memory_dynamic_max: num(vm['memory_dynamic_max']),
      memory_dynamic_min: num(vm['memory_dynamic_min']),
      VCPUs_max: num(vm['VCPUs_max']) || 1,
      VCPUs_at_startup: num(vm['VCPUs_at_startup']) || 1,
      is_a_template: false,
      tags: Array.isArray(vm['tags']) ? vm['tags'].filter((tag): tag is string => typeof tag === 'string') : [],
      other_config: {},
    },
    disks: drives.map((vbd) => {
      const vdi = metadata.vdis[vbd['VDI'] as string] as XapiRecord
      return {
        uuid: text(vdi['uuid']),
        name_label: text(vdi['name_label']),
        name_description: text(vdi['name_description']),
        virtual_size: num(vdi['virtual_size']),
        device: text(vbd['device']),
        userdevice: text(vbd['userdevice'], '0'),
        bootable: bool(vbd['bootable']),
        mode: text(vbd['mode']) === 'RO' ? 'RO' : 'RW',
      }
    }),
    vifs: Object.values(metadata.vifs)
      .sort((a, b) => num(a['device']) - num(b['device']))
      .map((vif) => ({ uuid: text(vif['uuid']), device: text(vif['device']), MAC: text(vif['MAC']), MTU: num(vif['MTU']) || 1500, network_name_label: text(vif['$network$name_label']) })),
  }
  return { description, vdiRefs }
}
