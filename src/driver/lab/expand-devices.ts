/** The devices of guests: disks (VDIs), their plugs (VBDs), network interfaces (VIFs) and their addresses. */

import type { VbdRecord, VdiRecord, VdiSnapshotRecord, VifRecord } from '../../model/records.js'
import type { ExpandContext, NetworkEntry, PoolScope, SrEntry } from './expand-context.js'
import { vdiDefaults } from './record-defaults.js'
import { MiB } from './units.js'

export const diskDevice = (position: number): string => `xvd${String.fromCharCode(97 + position)}`

export const dottedIpv4 = (ip: number): string => [ip >>> 24, (ip >>> 16) & 0xff, (ip >>> 8) & 0xff, ip & 0xff].join('.')

/** The next free guest address of a network. */
export function allocateAddress(network: NetworkEntry, where: string): string {
  const host = network.nextHost++
  if (host >= 2 ** (32 - network.prefix) - 1) throw new Error(`network "${network.spec.name}" has no address left for ${where}`)
  return dottedIpv4((network.base + host) >>> 0)
}

export function addVdi(context: ExpandContext, pool: PoolScope, sr: SrEntry, key: string, name: string, size: number): VdiRecord {
  const iso = sr.driver.contentType === 'iso'
  const usage =
    sr.driver.allocation === 'thin'
      ? Math.floor((size * (0.15 + 0.6 * context.random.fraction(`usage:${key}`))) / MiB) * MiB
      : size
  const vdi = context.add<VdiRecord>({
    type: 'VDI',
    ...context.base(key, pool.id),
    ...vdiDefaults({
      name_label: name,
      name_description: iso ? '' : 'Created by XO',
      size,
      usage,
      image_format: iso ? undefined : 'vhd',
      $SR: sr.record.id,
    }),
    chainPhysicalUsage: usage,
  })
  accountVdi(sr, vdi)
  return vdi
}

function accountVdi(sr: SrEntry, vdi: { id: string; size: number; usage: number }): void {
  sr.record.VDIs.push(vdi.id)
  sr.record.usage += vdi.size
  sr.record.physical_usage = (sr.record.physical_usage ?? 0) + vdi.usage
}

/** A disk snapshot: its own data is what changed since it was taken, a fraction of the disk on thin SRs. */
export function addVdiSnapshot(
  context: ExpandContext,
  pool: PoolScope,
  sr: SrEntry,
  vdi: VdiRecord,
  key: string,
  time: number,
): VdiSnapshotRecord {
  const usage =
    sr.driver.allocation === 'thin'
      ? Math.floor((vdi.usage * (0.05 + 0.25 * context.random.fraction(`usage:${key}`))) / MiB) * MiB
      : vdi.size
  const snapshot = context.add<VdiSnapshotRecord>({
    type: 'VDI-snapshot',
    ...context.base(key, pool.id),
    ...vdiDefaults({
      name_label: vdi.name_label,
      name_description: vdi.name_description,
      size: vdi.size,
      usage,
      image_format: 'vhd',
      $SR: vdi.$SR,
    }),
    snapshot_time: time,
    $snapshot_of: vdi.id,
  })
  vdi.snapshots.push(snapshot.id)
  accountVdi(sr, snapshot)
  return snapshot
}

interface VbdParams {
  readonly key: string
  readonly vm: { id: string; $VBDs: string[] }
  readonly position: number
  readonly vdi: { id: string; $VBDs: string[] } | undefined
  readonly attached: boolean
  readonly cd?: boolean
}

export function addVbd(context: ExpandContext, pool: PoolScope, { key, vm, position, vdi, attached, cd = false }: VbdParams): void {
  const vbd = context.add<VbdRecord>({
    type: 'VBD',
    ...context.base(key, pool.id),
    attached,
    bootable: position === 0,
    device: diskDevice(position),
    is_cd_drive: cd,
    position: String(position),
    read_only: cd,
    ...(vdi === undefined ? {} : { VDI: vdi.id }),
    VM: vm.id,
  })
  vm.$VBDs.push(vbd.id)
  vdi?.$VBDs.push(vbd.id)
}

interface VifParams {
  readonly key: string
  readonly vm: { id: string; VIFs: string[] }
  readonly device: number
  readonly network: NetworkEntry
  readonly mac: string
  readonly attached: boolean
}

export function addVif(context: ExpandContext, pool: PoolScope, { key, vm, device, network, mac, attached }: VifParams): VifRecord {
  const vif = context.add<VifRecord>({
    type: 'VIF',
    ...context.base(key, pool.id),
    device: String(device),
    MAC: mac,
    MTU: network.record.MTU,
    attached,
    lockingMode: 'network_default',
    allowedIpv4Addresses: [],
    allowedIpv6Addresses: [],
    txChecksumming: true,
    other_config: {},
    $network: network.record.id,
    $VM: vm.id,
  })
  vm.VIFs.push(vif.id)
  network.record.VIFs.push(vif.id)
  return vif
}
