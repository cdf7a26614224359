import { Type, type Static } from '@sinclair/typebox'
import { Bytes, Link, Links, Nullable, Operations, Seconds, StringDict, Tags, xapiRecord } from './schema-helpers.js'

export const VmPowerState = Type.Union(
  [Type.Literal('Running'), Type.Literal('Halted'), Type.Literal('Paused'), Type.Literal('Suspended')],
  { description: 'power state' },
)
export type VmPowerState = Static<typeof VmPowerState>

const Creation = Type.Object(
  {
    date: Type.String({ format: 'date-time', description: 'when the VM was created' }),
    template: Type.Optional(Type.String({ description: 'id of the template the VM was created from' })),
    user: Type.String({ description: 'id of the user the VM is attributed to (editable)' }),
    creator: Type.String({ description: 'id of the user who created the VM' }),
  },
  { additionalProperties: false, description: 'set when the VM was created through Xen Orchestra' },
)

/** Fields shared by VM, VM-snapshot, VM-template and VM-controller. */
const vmProperties = {
  name_label: Type.String(),
  name_description: Type.String(),
  tags: Tags(),
  notes: Type.Optional(Type.String({ description: 'free-form notes (other_config `xo:notes`)' })),
  other: StringDict('XAPI other_config'),
  creation: Type.Optional(Creation),
  resourceSet: Type.Optional(Type.String({ description: 'id of the resource set the VM belongs to' })),

  power_state: VmPowerState,
  current_operations: Operations(),
  blockedOperations: StringDict('operations refused on this VM, with the reason'),
  auto_poweron: Type.Boolean({ description: 'started when its host boots' }),
  high_availability: Type.Union([Type.Literal(''), Type.Literal('restart'), Type.Literal('best-effort')], {
    description: 'HA restart priority; empty when not protected',
  }),
  startDelay: Type.Integer({ minimum: 0, description: 'seconds to wait after starting this VM in a group start' }),
  startTime: Type.Optional(Nullable(Seconds('when the VM was last started'), { description: 'null when not running' })),
  installTime: Type.Optional(Nullable(Seconds('when the VM was installed'))),

  CPUs: Type.Object(
    {
      max: Type.Integer({ minimum: 1, description: 'VCPUs_max' }),
      number: Type.Integer({ minimum: 1, description: 'current (or at-startup) vCPU count' }),
    },
    { additionalProperties: false },
  ),
  coresPerSocket: Type.Optional(Type.Integer({ minimum: 1 })),
  cpuCap: Type.Optional(Type.Integer({ minimum: 0, description: 'percent of one physical CPU; 0 means no cap' })),
  cpuWeight: Type.Optional(Type.Integer({ minimum: 0, description: 'scheduler weight (default 256)' })),
  cpuMask: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }), { description: 'physical CPUs the vCPUs may run on' })),
  memory: Type.Object(
    {
      dynamic: Type.Array(Type.Integer({ minimum: 0 }), { minItems: 2, maxItems: 2, description: '[min, max] in bytes' }),
      static: Type.Array(Type.Integer({ minimum: 0 }), { minItems: 2, maxItems: 2, description: '[min, max] in bytes' }),
      size: Bytes('current memory size'),
      usage: Type.Optional(Bytes('memory used by the guest, when its agent reports it')),
    },
    { additionalProperties: false },
  ),

  boot: StringDict('HVM boot parameters (`firmware`: bios|uefi, `order`: device letters)'),
  bios_strings: StringDict('SMBIOS strings exposed to the guest'),
  virtualizationMode: Type.Union(
    [Type.Literal('hvm'), Type.Literal('pv'), Type.Literal('pvh'), Type.Literal('pv_in_pvh'), Type.Literal('unspecified')],
    { description: 'domain type' },
  ),
  PV_args: Type.Optional(Type.String({ description: 'kernel command line (non-HVM only)' })),
  vga: Type.Optional(Type.String({ description: 'emulated graphics card (HVM only)' })),
  videoram: Type.Optional(Type.Integer({ minimum: 0, description: 'video memory in MiB (HVM only)' })),
  viridian: Type.Boolean({ description: 'Hyper-V enlightenments for Windows guests' }),
  secureBoot: Type.Boolean(),
  isFirmwareSupported: Type.Boolean({ description: 'whether the guest OS supports the configured firmware' }),
  expNestedHvm: Type.Boolean({ description: 'deprecated: use isNestedVirtEnabled' }),
  isNestedVirtEnabled: Type.Boolean(),
  hasVendorDevice: Type.Boolean({ description: 'Windows Update can install PV drivers' }),
  needsVtpm: Type.Boolean({ description: 'the platform requires a virtual TPM' }),
  nicType: Type.Optional(Type.String({ description: 'emulated NIC model' })),

  addresses: StringDict('guest IP addresses keyed `<vif device>/<ipv4|ipv6>/<index>`'),
  mainIpAddress: Type.Optional(Type.String({ description: 'the first reported address' })),
  os_version: Nullable(StringDict(), { description: 'OS reported by the guest agent (`name`, `distro`, `major`, …)' }),
  managementAgentDetected: Type.Optional(Type.Boolean()),
  pvDriversDetected: Type.Optional(Type.Boolean()),
  pvDriversVersion: Type.Optional(Type.String()),
  pvDriversUpToDate: Type.Optional(Type.Boolean()),
  xenTools: Type.Optional(
    Type.Union(
      [
        Type.Literal(false),
        Type.Object(
          { major: Nullable(Type.Integer()), minor: Nullable(Type.Integer()), version: Nullable(Type.Number()) },
          { additionalProperties: false },
        ),
      ],
      { description: 'deprecated: use the pvDrivers* fields' },
    ),
  ),
  docker: Type.Optional(
    Type.Object(
      {
        enabled: Type.Boolean(),
        containers: Type.Optional(Type.Array(Type.String())),
        info: Type.Optional(Type.String()),
        process: Type.Optional(Type.String({ description: 'deprecated' })),
        version: Type.Optional(Type.String()),
      },
      { additionalProperties: false, description: 'Docker monitoring through xscontainer' },
    ),
  ),
  xenStoreData: StringDict('XenStore entries under vm-data/'),

  snapshots: Links('ids of the VM-snapshots of this VM'),
  parent: Type.Optional(Link('id of the VM-snapshot this VM derives from (its latest snapshot)')),
  affinityHost: Type.Optional(Link('id of the host the VM prefers to start on')),
  suspendSr: Type.Optional(Link('id of the SR receiving the suspend image')),
  VIFs: Links('ids of the VIFs'),
  VTPMs: Links('ids of the VTPMs'),
  VGPUs: Links('ids of the vGPUs'),
  $VGPUs: Links('ids of the vGPUs (duplicate of VGPUs)'),
  attachedPcis: Type.Optional(Type.Array(Type.String(), { description: 'PCI addresses passed through' })),
  $VBDs: Links('ids of the VBDs (disks and CD drives)'),
  $container: Link('where the VM lives: its host when running, paused or suspended; otherwise the pool, or the host of its local SR'),
}

export const VmSchema = xapiRecord(
  'Vm',
  'VM',
  {
    ...vmProperties,
    vulnerabilities: Type.Object(
      {
        xsa468: Type.Union(
          [
            Type.Boolean(),
            Type.Object(
              { reason: Type.String(), driver: Type.Optional(Type.String()), version: Type.Optional(Type.String()) },
              { additionalProperties: false },
            ),
          ],
          { description: 'exposure to XSA-468 (Windows PV drivers); an object explains an undetermined state' },
        ),
      },
      { additionalProperties: false },
    ),
  },
  'A virtual machine',
)

export const VmSnapshotSchema = xapiRecord(
  'VmSnapshot',
  'VM-snapshot',
  {
    ...vmProperties,
    snapshot_time: Seconds('when the snapshot was taken'),
    $snapshot_of: Link('id of the VM this is a snapshot of'),
    suspendVdi: Type.Optional(Link('id of the VDI holding the memory image (checkpoints)')),
  },
  'A snapshot of a VM',
)

export const VmTemplateSchema = xapiRecord(
  'VmTemplate',
  'VM-template',
  {
    ...vmProperties,
    isDefaultTemplate: Type.Boolean({ description: 'shipped with the hypervisor; read-only' }),
    template_info: Type.Object(
      {
        arch: Type.Optional(Type.String()),
        disks: Type.Array(
          Type.Object(
            {
              bootable: Type.Boolean(),
              size: Bytes('disk size'),
              SR: Type.String({ description: 'SR id, or empty for the default SR' }),
              type: Type.String(),
            },
            { additionalProperties: false },
          ),
          { description: 'disks created with a VM from this template' },
        ),
        install_methods: Type.Array(Type.String(), { description: 'e.g. cdrom, nfs, http, ftp' }),
        install_repository: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
  },
  'A VM template',
)

export const VmControllerSchema = xapiRecord('VmController', 'VM-controller', vmProperties, "A host's control domain (dom0)")

export type VmRecord = Static<typeof VmSchema>
export type VmSnapshotRecord = Static<typeof VmSnapshotSchema>
export type VmTemplateRecord = Static<typeof VmTemplateSchema>
export type VmControllerRecord = Static<typeof VmControllerSchema>
