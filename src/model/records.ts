import type { TObject } from '@sinclair/typebox'
import { AlarmSchema } from './alarm.js'
import { GpuGroupSchema, PciSchema, PgpuSchema, VgpuSchema, VtpmSchema } from './devices.js'
import { HostSchema } from './host.js'
import { MessageSchema } from './message.js'
import { NetworkSchema, PifSchema, VifSchema } from './network.js'
import { PoolSchema } from './pool.js'
import { PbdSchema, SmSchema, SrSchema, VbdSchema, VdiSchema, VdiSnapshotSchema, VdiUnmanagedSchema } from './storage.js'
import { VmControllerSchema, VmSchema, VmSnapshotSchema, VmTemplateSchema } from './vm.js'

export * from './alarm.js'
export * from './devices.js'
export * from './host.js'
export * from './message.js'
export * from './network.js'
export * from './pool.js'
export * from './storage.js'
export * from './vm.js'

/**
 * The schema of each infrastructure record, by XO type. `alarm` is the REST
 * view of alarm messages (its records keep `type: 'message'`).
 */
export const recordSchemas: Readonly<Record<string, TObject>> = {
  VM: VmSchema,
  'VM-snapshot': VmSnapshotSchema,
  'VM-template': VmTemplateSchema,
  'VM-controller': VmControllerSchema,
  host: HostSchema,
  pool: PoolSchema,
  SR: SrSchema,
  VDI: VdiSchema,
  'VDI-snapshot': VdiSnapshotSchema,
  'VDI-unmanaged': VdiUnmanagedSchema,
  VBD: VbdSchema,
  VIF: VifSchema,
  PIF: PifSchema,
  PBD: PbdSchema,
  SM: SmSchema,
  network: NetworkSchema,
  message: MessageSchema,
  alarm: AlarmSchema,
  PCI: PciSchema,
  PGPU: PgpuSchema,
  vgpu: VgpuSchema,
  gpuGroup: GpuGroupSchema,
  VTPM: VtpmSchema,
}
