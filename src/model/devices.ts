import { Type, type Static } from '@sinclair/typebox'
import { Link, Links, StringDict, StringMap, xapiRecord } from './schema-helpers.js'

export const PciSchema = xapiRecord(
  'Pci',
  'PCI',
  {
    class_name: Type.String(),
    device_name: Type.String(),
    pci_id: Type.String({ description: 'PCI address, e.g. 0000:0d:00.0' }),
    $host: Link('id of the host'),
  },
  'A PCI device of a host',
)

export const PgpuSchema = xapiRecord(
  'Pgpu',
  'PGPU',
  {
    dom0Access: Type.String({ description: 'enabled, disable_on_reboot, disabled or enable_on_reboot' }),
    enabledVgpuTypes: Links('ids of the vGPU types enabled'),
    gpuGroup: Link('id of the GPU group'),
    isSystemDisplayDevice: Type.Boolean(),
    pci: Link('id of the PCI device'),
    supportedVgpuMaxCapcities: Type.Optional(
      StringMap(Type.Integer({ minimum: 0 }), { description: 'vGPUs of each type the GPU can host (XO spelling)' }),
    ),
    supportedVgpuTypes: Links('ids of the vGPU types supported'),
    host: Link('id of the host'),
    $host: Link('id of the host (duplicate of host)'),
    vgpus: Links('ids of the vGPUs resident on this GPU'),
    $vgpus: Links('ids of the vGPUs (duplicate of vgpus)'),
  },
  'A physical GPU of a host',
)

export const VgpuSchema = xapiRecord(
  'Vgpu',
  'vgpu',
  {
    currentlyAttached: Type.Boolean(),
    device: Type.String(),
    gpuGroup: Link('id of the GPU group'),
    otherConfig: StringDict(),
    resident_on: Type.Optional(Link('id of the PGPU it runs on')),
    vgpuType: Link('id of the vGPU type'),
    vm: Link('id of the VM'),
  },
  'A virtual GPU of a VM',
)

export const GpuGroupSchema = xapiRecord(
  'GpuGroup',
  'gpuGroup',
  {
    allocation: Type.String({ description: 'how vGPUs are placed on its GPUs: breadth_first or depth_first' }),
    enabledVgpuTypes: Links('ids of the vGPU types enabled'),
    gpuTypes: Type.Array(Type.String(), { description: 'the PCI ids of the GPUs it groups' }),
    name_description: Type.String(),
    name_label: Type.String(),
    otherConfig: StringDict(),
    pgpus: Links('ids of its physical GPUs'),
    supportedVgpuTypes: Links('ids of the vGPU types supported'),
    vgpus: Links('ids of the vGPUs placed on it'),
  },
  'A group of identical physical GPUs of a pool, where vGPUs are placed',
)

export const VtpmSchema = xapiRecord('Vtpm', 'VTPM', { vm: Link('id of the VM') }, 'A virtual TPM of a VM')

export type PciRecord = Static<typeof PciSchema>
export type PgpuRecord = Static<typeof PgpuSchema>
export type VgpuRecord = Static<typeof VgpuSchema>
export type GpuGroupRecord = Static<typeof GpuGroupSchema>
export type VtpmRecord = Static<typeof VtpmSchema>
