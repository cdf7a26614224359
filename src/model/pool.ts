import { Type, type Static } from '@sinclair/typebox'
import { Link, Links, Operations, StringDict, Tags, xapiRecord } from './schema-helpers.js'

export const PoolSchema = xapiRecord(
  'Pool',
  'pool',
  {
    name_label: Type.String({ description: "falls back to the master's name when empty" }),
    name_description: Type.String(),
    tags: Tags(),
    master: Link('id of the master host'),
    default_SR: Type.Optional(Link('id of the default SR')),
    crashDumpSr: Type.Optional(Link('id of the SR receiving crash dumps')),
    suspendSr: Type.Optional(Link('id of the SR receiving suspend images')),
    HA_enabled: Type.Boolean({ description: 'high availability' }),
    haSrs: Links('ids of the SRs holding HA state files'),
    haRebootVmOnInternalShutdown: Type.Boolean({ description: 'HA restarts protected VMs shut down from inside' }),
    auto_poweron: Type.Boolean(),
    cpus: Type.Object(
      { cores: Type.Optional(Type.Integer({ minimum: 1 })), sockets: Type.Optional(Type.Integer({ minimum: 1 })) },
      { additionalProperties: false },
    ),
    current_operations: Operations(),
    migrationCompression: Type.Optional(Type.Boolean()),
    otherConfig: StringDict('XAPI other_config'),
    platform_version: Type.String(),
    zstdSupported: Type.Boolean(),
    vtpmSupported: Type.Boolean(),
  },
  'A pool of hosts sharing storage and networks',
)

export type PoolRecord = Static<typeof PoolSchema>
