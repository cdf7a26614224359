import { Type, type Static } from '@sinclair/typebox'
import { Bytes, Link, Links, Nullable, Operations, Seconds, StringDict, Tags, xapiRecord } from './schema-helpers.js'

const SupplementalPack = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    author: Type.String(),
    version: Type.String(),
    guidance: Type.Optional(Type.String()),
    hosts: Type.Optional(Links('ids of the hosts the update applies to')),
    size: Type.Optional(Bytes('installation size')),
    vdi: Type.Optional(Link('id of the VDI holding the update')),
  },
  { additionalProperties: false },
)

export const HostSchema = xapiRecord(
  'Host',
  'host',
  {
    name_label: Type.String(),
    name_description: Type.String(),
    tags: Tags(),
    hostname: Type.String(),
    address: Type.String({ description: 'management IP address' }),
    iscsiIqn: Type.String({ description: 'iSCSI initiator name' }),

    version: Type.String({ description: 'product version' }),
    productBrand: Type.String({ description: 'e.g. XCP-ng' }),
    build: Type.String({ description: 'build number' }),
    license_params: StringDict(),
    license_server: StringDict(),
    license_expiry: Nullable(Seconds('license expiry')),
    zstdSupported: Type.Boolean({ description: 'exports can be zstd-compressed' }),
    supplementalPacks: Type.Array(SupplementalPack),
    patches: Links('deprecated: ids of the applied patches'),
    certificates: Type.Optional(
      Type.Array(
        Type.Object(
          { fingerprint: Type.String({ description: 'SHA-256, colon-separated hex' }), notAfter: Seconds('expiry') },
          { additionalProperties: false },
        ),
        { description: 'TLS certificates of the host' },
      ),
    ),

    enabled: Type.Boolean({ description: 'accepts new VMs (false in maintenance mode)' }),
    power_state: Type.Union([Type.Literal('Running'), Type.Literal('Halted'), Type.Literal('Unknown')]),
    powerOnMode: Type.String({ description: 'remote power-on method; empty when disabled' }),
    current_operations: Operations(),
    rebootRequired: Type.Boolean({ description: 'updates were installed since the last boot' }),
    startTime: Nullable(Seconds('last boot')),
    agentStartTime: Nullable(Seconds('last toolstack start')),
    multipathing: Type.Boolean(),
    logging: StringDict(),
    otherConfig: StringDict('XAPI other_config'),

    memory: Type.Object(
      {
        size: Bytes('physical memory'),
        usage: Bytes('memory in use, control domain and resident VMs included'),
        total: Type.Optional(Bytes('deprecated')),
      },
      { additionalProperties: false },
    ),
    cpus: Type.Object(
      { cores: Type.Optional(Type.Integer({ minimum: 1 })), sockets: Type.Optional(Type.Integer({ minimum: 1 })) },
      { additionalProperties: false },
    ),
    CPUs: StringDict('deprecated: raw XAPI cpu_info (cpu_count, modelname, …)'),
    bios_strings: StringDict(),
    chipset_info: Type.Object({ iommu: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    hvmCapable: Type.Boolean(),

    controlDomain: Type.Optional(Link('id of the VM-controller (dom0)')),
    residentVms: Links('ids of the VMs on this host, control domain included'),
    PIFs: Links('ids of the PIFs'),
    $PIFs: Links('ids of the PIFs (duplicate of PIFs)'),
    PCIs: Links('ids of the PCI devices'),
    $PCIs: Links('ids of the PCI devices (duplicate of PCIs)'),
    PGPUs: Links('ids of the physical GPUs'),
    $PGPUs: Links('ids of the physical GPUs (duplicate of PGPUs)'),
    $PBDs: Links('ids of the PBDs connecting SRs to this host'),
  },
  'A physical host',
)

export type HostRecord = Static<typeof HostSchema>
