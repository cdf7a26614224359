import { randomBytes, randomUUID } from 'node:crypto'
import type { VbdRecord, VdiRecord, VdiSnapshotRecord, VifRecord } from '../../../model/records.js'
import { diskDevice } from '../expand-devices.js'
import { recordBase, vdiDefaults, type RecordBase } from '../record-defaults.js'
import { addToList } from './lists.js'
import type { Frozen, Plan } from './plan.js'
import { accountDisk, isThick } from './sr-usage.js'

/** The XAPI identity of a new object: a fresh uuid, which is also its id. */
export function identity(poolId: string, uuid: string = randomUUID()): RecordBase {
  return recordBase(uuid, poolId)
}

/** A MAC with the locally-administered bit set, as XAPI generates for VIFs. */
export function randomMac(): string {
  const bytes = randomBytes(6)
  bytes[0] = ((bytes[0] ?? 0) & 0xfc) | 0x02
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(':')
}

interface VbdParams {
  readonly vm: { readonly id: string; readonly $pool: string }
  readonly position: number
  readonly vdi: string | undefined
  readonly attached: boolean
  readonly cd?: boolean
  /** default: the first disk drive is */
  readonly bootable?: boolean
  /** default: CD drives are */
  readonly readOnly?: boolean
}

/** Plugs a disk (or an empty CD drive) into a VM, linking both ends. */
export function addVbd(plan: Plan, { vm, position, vdi, attached, cd = false, bootable = position === 0 && !cd, readOnly = cd }: VbdParams): VbdRecord {
  const vbd = plan.add<VbdRecord>({
    type: 'VBD',
    ...identity(vm.$pool),
    attached,
    bootable,
    device: diskDevice(position),
    is_cd_drive: cd,
    position: String(position),
    read_only: readOnly,
    ...(vdi === undefined ? {} : { VDI: vdi }),
    VM: vm.id,
  })
  addToList(plan.edit(vm.id, 'VM', 'VM-snapshot').$VBDs, vbd.id)
  if (vdi !== undefined) addToList(plan.edit(vdi, 'VDI', 'VDI-snapshot').$VBDs, vbd.id)
  return vbd
}

interface VifParams {
  readonly vm: { readonly id: string; readonly $pool: string }
  readonly device: string
  readonly network: string
  readonly mac: string
  readonly attached: boolean
  /** settings to carry over from the VIF this one copies */
  readonly like?: Frozen<VifRecord>
}

export function addVif(plan: Plan, { vm, device, network, mac, attached, like }: VifParams): VifRecord {
  const net = plan.edit(network, 'network')
  const vif = plan.add<VifRecord>({
    type: 'VIF',
    ...identity(vm.$pool),
    device,
    MAC: mac,
    MTU: net.MTU,
    attached,
    lockingMode: like?.lockingMode ?? 'network_default',
    allowedIpv4Addresses: [...(like?.allowedIpv4Addresses ?? [])],
    allowedIpv6Addresses: [...(like?.allowedIpv6Addresses ?? [])],
    txChecksumming: like?.txChecksumming ?? true,
    ...(like?.rateLimit === undefined ? {} : { rateLimit: like.rateLimit }),
    other_config: { ...like?.other_config },
    $network: network,
    $VM: vm.id,
  })
  addToList(net.VIFs, vif.id)
  addToList(plan.edit(vm.id, 'VM', 'VM-snapshot').VIFs, vif.id)
  return vif
}

interface DiskParams {
  readonly sr: string
  readonly poolId: string
  readonly name_label: string
  readonly name_description: string
  readonly size: number
  /** what the disk holds already (copies); a new disk holds nothing */
  readonly usage?: number
  readonly tags?: readonly string[]
  /** an id chosen beforehand, when the disk's content was made first */
  readonly id?: string
}

/**
 * A new disk. On a thin SR it takes what it holds (nothing, for a new disk or
 * a fast clone, whose blocks stay shared with its parent); on a thick SR it
 * takes its whole size.
 */
export function addVdi(plan: Plan, { sr, poolId, name_label, name_description, size, usage = 0, tags = [], id }: DiskParams): VdiRecord {
  const used = isThick(plan.get(sr, 'SR')) ? size : Math.min(usage, size)
  const vdi = plan.add<VdiRecord>({
    type: 'VDI',
    ...identity(poolId, id),
    ...vdiDefaults({ name_label, name_description, tags, size, usage: used, image_format: 'vhd', $SR: sr }),
    chainPhysicalUsage: used,
  })
  accountDisk(plan, vdi, 1)
  return vdi
}

/** A snapshot of a disk: at first it owns no block of its own (thin) or a full-size volume (thick). */
export function addVdiSnapshot(plan: Plan, vdiId: string, time: number, id?: string): VdiSnapshotRecord {
  const vdi = plan.edit(vdiId, 'VDI')
  const snapshot = plan.add<VdiSnapshotRecord>({
    type: 'VDI-snapshot',
    ...identity(vdi.$pool, id),
    ...vdiDefaults({
      name_label: vdi.name_label,
      name_description: vdi.name_description,
      size: vdi.size,
      usage: isThick(plan.get(vdi.$SR, 'SR')) ? vdi.size : 0,
      VDI_type: vdi.VDI_type,
      image_format: vdi.image_format ?? 'vhd',
      $SR: vdi.$SR,
    }),
    snapshot_time: time,
    $snapshot_of: vdi.id,
  })
  addToList(vdi.snapshots, snapshot.id)
  accountDisk(plan, snapshot, 1)
  return snapshot
}
