import { Type, type Static } from '@sinclair/typebox'
import { Link, Links, Operations, StringDict, Tags, xapiRecord } from './schema-helpers.js'

export const NetworkSchema = xapiRecord(
  'Network',
  'network',
  {
    name_label: Type.String(),
    name_description: Type.String(),
    tags: Tags(),
    bridge: Type.String({ description: 'bridge device on each host, e.g. xenbr0' }),
    MTU: Type.Integer({ minimum: 68 }),
    automatic: Type.Boolean({ description: 'new VMs get a VIF on this network by default' }),
    defaultIsLocked: Type.Boolean({ description: 'VIFs default to the disabled locking mode' }),
    nbd: Type.Optional(Type.Boolean({ description: 'NBD disk access is offered over TLS on this network' })),
    insecureNbd: Type.Optional(Type.Boolean({ description: 'NBD disk access is offered without TLS' })),
    isBonded: Type.Boolean(),
    current_operations: Operations(),
    other_config: StringDict(),
    PIFs: Links('ids of the PIFs (one per host connected)'),
    VIFs: Links('ids of the VIFs on this network'),
  },
  'A network',
)

const IpMode = Type.Union([Type.Literal('None'), Type.Literal('DHCP'), Type.Literal('Static')])

export const PifSchema = xapiRecord(
  'Pif',
  'PIF',
  {
    device: Type.String({ description: 'e.g. eth0' }),
    deviceName: Type.Optional(Type.String({ description: 'NIC model' })),
    mac: Type.String(),
    mtu: Type.Integer({ minimum: 68 }),
    vlan: Type.Integer({ minimum: -1, maximum: 4094, description: '-1 when untagged' }),
    ip: Type.String({ description: 'IPv4 address; empty when unconfigured' }),
    netmask: Type.String(),
    gateway: Type.String(),
    dns: Type.String({ description: 'comma-separated DNS servers' }),
    ipv6: Type.Array(Type.String()),
    mode: IpMode,
    ipv6Mode: Type.Union([Type.Literal('None'), Type.Literal('DHCP'), Type.Literal('Static'), Type.Literal('Autoconf')]),
    primaryAddressType: Type.Union([Type.Literal('IPv4'), Type.Literal('IPv6')]),
    attached: Type.Boolean({ description: 'currently plugged' }),
    carrier: Type.Boolean({ description: 'link detected' }),
    speed: Type.Optional(Type.Integer({ minimum: 0, description: 'link speed in Mbit/s' })),
    management: Type.Boolean({ description: 'carries the host management traffic' }),
    physical: Type.Boolean({ description: 'a real NIC (not a VLAN or bond interface)' }),
    disallowUnplug: Type.Boolean(),
    isBondMaster: Type.Boolean(),
    isBondSlave: Type.Boolean(),
    bondMaster: Type.Optional(Link('id of the bond master PIF')),
    bondSlaves: Type.Optional(Links('ids of the bonded PIFs')),
    $host: Link('id of the host'),
    $network: Link('id of the network'),
  },
  "A physical interface: a host's connection to a network",
)

export const VifSchema = xapiRecord(
  'Vif',
  'VIF',
  {
    device: Type.String({ description: 'interface index in the guest, as a string' }),
    MAC: Type.String(),
    MTU: Type.Integer({ minimum: 68 }),
    attached: Type.Boolean({ description: 'currently plugged' }),
    lockingMode: Type.Union(
      [Type.Literal('network_default'), Type.Literal('locked'), Type.Literal('unlocked'), Type.Literal('disabled')],
      { description: 'traffic filtering: `locked` only lets the allowed addresses through' },
    ),
    allowedIpv4Addresses: Type.Array(Type.String()),
    allowedIpv6Addresses: Type.Array(Type.String()),
    txChecksumming: Type.Boolean({ description: 'TX checksum offload' }),
    rateLimit: Type.Optional(Type.Integer({ minimum: 0, description: 'in kB/s' })),
    other_config: StringDict(),
    $network: Link('id of the network'),
    $VM: Link('id of the VM'),
  },
  "A virtual interface: a VM's connection to a network",
)

export type NetworkRecord = Static<typeof NetworkSchema>
export type PifRecord = Static<typeof PifSchema>
export type VifRecord = Static<typeof VifSchema>
