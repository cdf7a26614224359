/**
 * The fields XAPI gives a new object, shared by the seed expansion and the
 * runtime operations so that both build the same records. Each call returns
 * fresh arrays and maps: no two records alias one.
 */

import type { NetworkRecord } from '../../model/network.js'
import type { VdiRecord, VmRecord } from '../../model/records.js'

/** The fields every XAPI-backed record starts with. */
export interface RecordBase {
  id: string
  uuid: string
  $pool: string
  $poolId: string
  _xapiRef: string
}

/** The identity of an XAPI object: its uuid, its id (the uuid unless given), its pool and its XAPI ref. */
export const recordBase = (uuid: string, poolId: string, id: string = uuid): RecordBase => ({
  id,
  uuid,
  $pool: poolId,
  $poolId: poolId,
  _xapiRef: `OpaqueRef:${uuid}`,
})

/** What a VDI and a VDI-snapshot have in common, in the order of their records. */
export type VdiFields = Omit<VdiRecord, keyof RecordBase | 'type' | 'chainPhysicalUsage'>

interface VdiParams {
  readonly name_label: string
  readonly name_description: string
  readonly tags?: readonly string[]
  readonly size: number
  readonly usage: number
  readonly VDI_type?: VdiRecord['VDI_type']
  /** absent on an ISO */
  readonly image_format: string | undefined
  readonly $SR: string
}

/** A new disk's (or disk snapshot's) fields: no snapshot, plug, operation or tracking of its own yet. */
export function vdiDefaults({
  name_label,
  name_description,
  tags = [],
  size,
  usage,
  VDI_type = 'user',
  image_format,
  $SR,
}: VdiParams): VdiFields {
  return {
    name_label,
    name_description,
    tags: [...tags],
    size,
    usage,
    VDI_type,
    cbt_enabled: false,
    missing: false,
    ...(image_format === undefined ? {} : { image_format }),
    snapshots: [],
    current_operations: {},
    other_config: {},
    $SR,
    $VBDs: [],
  }
}

export type VmLinks = Pick<VmRecord, 'snapshots' | 'VIFs' | 'VTPMs' | 'VGPUs' | '$VGPUs' | '$VBDs'>

/** A new VM's links: no snapshot or device yet. */
export const vmLinkDefaults = (): VmLinks => ({
  snapshots: [],
  VIFs: [],
  VTPMs: [],
  VGPUs: [],
  $VGPUs: [],
  $VBDs: [],
})

/** What XAPI sets on a new network, whatever made it: no PIF or VIF yet, nothing locked or bonded. */
export type NetworkDefaults = Pick<
  NetworkRecord,
  'automatic' | 'defaultIsLocked' | 'nbd' | 'insecureNbd' | 'isBonded' | 'current_operations' | 'other_config' | 'PIFs' | 'VIFs'
>

export const networkDefaults = (): NetworkDefaults => ({
  automatic: false,
  defaultIsLocked: false,
  nbd: false,
  insecureNbd: false,
  isBonded: false,
  current_operations: {},
  other_config: {},
  PIFs: [],
  VIFs: [],
})
