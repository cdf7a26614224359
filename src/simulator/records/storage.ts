import type { XoRecord } from '../../driver/types.js'
import { bool, common, num, refs, seconds, str, stringMap, strings, type RecordContext, type XapiObject } from './context.js'

export function srObject(sr: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(sr)
  const smConfig = stringMap(sr['sm_config'])
  const strategy = str(sr, 'allocationStrategy')
  return {
    cls: 'SR',
    ref,
    uuid,
    fields: {
      uuid,
      name_label: str(sr, 'name_label'),
      name_description: str(sr, 'name_description'),
      current_operations: stringMap(sr['current_operations']),
      VDIs: refs(context, sr['VDIs']),
      PBDs: refs(context, sr['$PBDs']),
      virtual_allocation: num(sr, 'usage'),
      physical_utilisation: num(sr, 'physical_usage'),
      physical_size: num(sr, 'size'),
      type: str(sr, 'SR_type'),
      content_type: str(sr, 'content_type'),
      shared: bool(sr, 'shared'),
      other_config: stringMap(sr['other_config']),
      tags: strings(sr['tags']),
      // XO reads thin or thick provisioning from here.
      sm_config: strategy === '' || 'allocation' in smConfig ? smConfig : { ...smConfig, allocation: strategy },
    },
  }
}

export function vdiObject(vdi: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(vdi)
  const snapshot = vdi.type === 'VDI-snapshot'
  const format = str(vdi, 'image_format')
  return {
    cls: 'VDI',
    ref,
    uuid,
    fields: {
      uuid,
      name_label: str(vdi, 'name_label'),
      name_description: str(vdi, 'name_description'),
      current_operations: stringMap(vdi['current_operations']),
      SR: context.ref(vdi['$SR']),
      VBDs: refs(context, vdi['$VBDs']),
      virtual_size: num(vdi, 'size'),
      physical_utilisation: num(vdi, 'usage'),
      type: str(vdi, 'VDI_type', 'user'),
      other_config: stringMap(vdi['other_config']),
      location: uuid,
      managed: true,
      missing: bool(vdi, 'missing'),
      sm_config: format === '' ? {} : { image_format: format },
      is_a_snapshot: snapshot,
      snapshot_of: context.ref(vdi['$snapshot_of']),
      snapshots: refs(context, vdi['snapshots']),
      snapshot_time: seconds(vdi['snapshot_time']),
      tags: strings(vdi['tags']),
      cbt_enabled: bool(vdi, 'cbt_enabled'),
    },
  }
}

export function vbdObject(vbd: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(vbd)
  const cd = bool(vbd, 'is_cd_drive')
  const vdi = context.ref(vbd['VDI'])
  return {
    cls: 'VBD',
    ref,
    uuid,
    fields: {
      uuid,
      VM: context.ref(vbd['VM']),
      VDI: vdi,
      device: str(vbd, 'device'),
      userdevice: str(vbd, 'position'),
      bootable: bool(vbd, 'bootable'),
      mode: bool(vbd, 'read_only') || cd ? 'RO' : 'RW',
      type: cd ? 'CD' : 'Disk',
      unpluggable: true,
      empty: vdi === 'OpaqueRef:NULL',
      currently_attached: bool(vbd, 'attached'),
    },
  }
}

export function pbdObject(pbd: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(pbd)
  return {
    cls: 'PBD',
    ref,
    uuid,
    fields: {
      uuid,
      host: context.ref(pbd['host']),
      SR: context.ref(pbd['SR']),
      device_config: stringMap(pbd['device_config']),
      currently_attached: bool(pbd, 'attached'),
      other_config: stringMap(pbd['otherConfig']),
    },
  }
}

export function smObject(sm: XoRecord): XapiObject {
  const { uuid, ref } = common(sm)
  const features = typeof sm['features'] === 'object' && sm['features'] !== null ? (sm['features'] as Record<string, unknown>) : {}
  return {
    cls: 'SM',
    ref,
    uuid,
    fields: {
      uuid,
      name_label: str(sm, 'name_label'),
      name_description: str(sm, 'name_description'),
      type: str(sm, 'SM_type'),
      vendor: str(sm, 'vendor'),
      configuration: stringMap(sm['configuration']),
      features: Object.fromEntries(Object.entries(features).filter((entry): entry is [string, number] => typeof entry[1] === 'number')),
      driver_filename: str(sm, 'driver_filename'),
      required_cluster_stack: strings(sm['required_cluster_stack']),
    },
  }
}
