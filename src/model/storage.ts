import { Type, type Static } from '@sinclair/typebox'
import { Bytes, Link, Links, Nullable, Operations, Seconds, StringDict, StringMap, Tags, xapiRecord } from './schema-helpers.js'

export const SrSchema = xapiRecord(
  'Sr',
  'SR',
  {
    name_label: Type.String(),
    name_description: Type.String(),
    tags: Tags(),
    SR_type: Type.String({ description: 'driver: ext, lvm, lvmoiscsi, nfs, iso, smb, zfs, linstor, …' }),
    content_type: Type.String({ description: '`user` for VM disks, `iso` for ISO libraries' }),
    shared: Type.Boolean({ description: 'reachable from every host of the pool' }),
    size: Nullable(Bytes('physical size')),
    physical_usage: Nullable(Bytes('space actually used')),
    usage: Bytes('virtual allocation: sum of the sizes of its VDIs'),
    allocationStrategy: Type.Optional(
      Type.Union([Type.Literal('thin'), Type.Literal('thick'), Type.Literal('unknown')], {
        description: 'provisioning of the driver; absent for drivers without one (iso)',
      }),
    ),
    inMaintenanceMode: Type.Boolean(),
    current_operations: Operations(),
    other_config: StringDict(),
    sm_config: StringDict(),
    VDIs: Links('ids of the VDIs and VDI-snapshots stored here'),
    $PBDs: Links('ids of the PBDs connecting this SR to hosts'),
    $container: Link('the pool if shared (or not plugged), else the host of its PBD'),
  },
  'A storage repository',
)

export const VdiType = Type.Union(
  [
    Type.Literal('user'),
    Type.Literal('system'),
    Type.Literal('suspend'),
    Type.Literal('crashdump'),
    Type.Literal('ha_statefile'),
    Type.Literal('metadata'),
    Type.Literal('redo_log'),
    Type.Literal('rrd'),
    Type.Literal('pvs_cache'),
    Type.Literal('cbt_metadata'),
    Type.Literal('ephemeral'),
  ],
  { description: 'what the disk holds' },
)

const vdiProperties = {
  name_label: Type.String(),
  name_description: Type.String(),
  tags: Tags(),
  size: Bytes('virtual size'),
  usage: Bytes('physical utilisation'),
  VDI_type: VdiType,
  cbt_enabled: Type.Optional(Type.Boolean({ description: 'changed block tracking' })),
  missing: Type.Boolean({ description: 'the SR scan no longer finds it' }),
  parent: Type.Optional(Type.String({ description: 'uuid of the parent in the VHD chain' })),
  image_format: Type.Optional(Type.String({ description: 'vhd or qcow2' })),
  snapshots: Links('ids of the VDI-snapshots of this disk'),
  current_operations: Operations(),
  other_config: StringDict(),
  $SR: Link('id of the SR'),
  $VBDs: Links('ids of the VBDs plugging this disk into VMs'),
}

export const VdiSchema = xapiRecord(
  'Vdi',
  'VDI',
  { ...vdiProperties, chainPhysicalUsage: Bytes('physical utilisation of the disk and its VHD ancestors') },
  'A virtual disk',
)

export const VdiSnapshotSchema = xapiRecord(
  'VdiSnapshot',
  'VDI-snapshot',
  {
    ...vdiProperties,
    snapshot_time: Seconds('when the snapshot was taken'),
    $snapshot_of: Type.Optional(Link('id of the VDI this is a snapshot of')),
  },
  'A snapshot of a virtual disk',
)

export const VdiUnmanagedSchema = xapiRecord(
  'VdiUnmanaged',
  'VDI-unmanaged',
  { ...vdiProperties, $VBDs: Type.Array(Type.String(), { maxItems: 0, description: 'always empty: an unmanaged disk is plugged into no VM' }) },
  'A disk XAPI lists with managed=false (the base copy of a VHD chain, for instance): visible, never managed',
)

export const VbdSchema = xapiRecord(
  'Vbd',
  'VBD',
  {
    attached: Type.Boolean({ description: 'currently plugged' }),
    bootable: Type.Boolean(),
    device: Nullable(Type.String({ description: 'device name in the guest, e.g. xvda' })),
    is_cd_drive: Type.Boolean(),
    position: Type.String({ description: 'userdevice: the slot number' }),
    read_only: Type.Boolean(),
    VDI: Type.Optional(Link('id of the disk; absent for an empty CD drive')),
    VM: Link('id of the VM'),
  },
  'A virtual block device: the link between a VM and a disk',
)

export const PbdSchema = xapiRecord(
  'Pbd',
  'PBD',
  {
    attached: Type.Boolean({ description: 'currently plugged' }),
    host: Link('id of the host'),
    SR: Link('id of the SR'),
    device_config: StringDict('driver configuration; secrets shown as `* obfuscated *`'),
    otherConfig: StringDict(),
  },
  'A physical block device: the link between a host and an SR',
)

export const SmSchema = xapiRecord(
  'Sm',
  'SM',
  {
    name_label: Type.String(),
    name_description: Type.String(),
    SM_type: Type.String({ description: 'the SR_type this driver serves' }),
    vendor: Type.String(),
    configuration: StringDict('device_config keys the driver accepts, with their meaning'),
    features: StringMap(Type.Integer({ minimum: 0 }), { description: 'capabilities, with their version' }),
    driver_filename: Type.String(),
    required_cluster_stack: Type.Array(Type.String()),
    supported_image_formats: Type.Array(Type.String()),
  },
  'A storage manager driver',
)

export type SrRecord = Static<typeof SrSchema>
export type VdiRecord = Static<typeof VdiSchema>
export type VdiSnapshotRecord = Static<typeof VdiSnapshotSchema>
export type VdiUnmanagedRecord = Static<typeof VdiUnmanagedSchema>
export type VbdRecord = Static<typeof VbdSchema>
export type PbdRecord = Static<typeof PbdSchema>
export type SmRecord = Static<typeof SmSchema>
