import { readFileSync } from 'node:fs'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

/**
 * A lab described the way a person would: objects are named, and refer to one
 * another by name within their pool. expandLab() turns it into XO records.
 * Sizes are bytes or text such as "40 GiB"; ages are text such as "3 d" or "90 min".
 */

const Name = Type.String({ minLength: 1 })
const Size = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^\\d+(\\.\\d+)?\\s*(B|KiB|MiB|GiB|TiB)$' })], {
  description: 'bytes, or text such as "40 GiB"',
})
const Age = Type.String({ pattern: '^\\d+\\s*(s|min|h|d)$', description: 'how long ago, e.g. "90 min", "3 d"' })
const Tags = Type.Optional(Type.Array(Type.String()))

const HostSpecSchema = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    address: Type.String({ description: 'management IPv4 address, in the management network' }),
    master: Type.Optional(Type.Boolean({ description: 'the pool master (default: the first host)' })),
    sockets: Type.Integer({ minimum: 1 }),
    cores: Type.Integer({ minimum: 1, description: 'logical CPUs in total' }),
    memory: Size,
    uptime: Type.Optional(Age),
    tags: Tags,
  },
  { additionalProperties: false },
)

const NetworkSpecSchema = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    device: Type.String({ description: 'NIC of every host carrying it, e.g. eth1' }),
    subnet: Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+\\.\\d+/\\d+$', description: 'IPv4 CIDR the guests get addresses in' }),
    mtu: Type.Optional(Type.Integer({ minimum: 68 })),
    management: Type.Optional(Type.Boolean({ description: 'the hosts are managed through it' })),
    tags: Tags,
  },
  { additionalProperties: false },
)

export const SrDriver = Type.Union([
  Type.Literal('ext'),
  Type.Literal('lvm'),
  Type.Literal('nfs'),
  Type.Literal('iso'),
  Type.Literal('lvmoiscsi'),
  Type.Literal('smb'),
])
export type SrDriver = Static<typeof SrDriver>

const SrSpecSchema = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    driver: SrDriver,
    size: Size,
    host: Type.Optional(Type.String({ description: 'the host of a local SR; shared SRs have none' })),
    location: Type.Optional(Type.String({ description: 'server:/path or device; derived when absent' })),
    isos: Type.Optional(Type.Array(Type.Object({ name: Name, size: Size }, { additionalProperties: false }))),
    tags: Tags,
  },
  { additionalProperties: false },
)

const TemplateSpecSchema = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    os: Type.String({ description: 'key of the OS catalog, e.g. debian-12' }),
    default: Type.Optional(Type.Boolean({ description: 'shipped with the hypervisor (default true)' })),
    cpus: Type.Integer({ minimum: 1 }),
    memory: Size,
    disk: Size,
  },
  { additionalProperties: false },
)

const PowerState = Type.Union([
  Type.Literal('Running'),
  Type.Literal('Halted'),
  Type.Literal('Paused'),
  Type.Literal('Suspended'),
])

const DiskSpecSchema = Type.Object(
  {
    name: Type.Optional(Type.String()),
    size: Size,
    sr: Type.String({ description: 'SR name' }),
  },
  { additionalProperties: false },
)

const VmSpecSchema = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    template: Type.String({ description: 'template name' }),
    power: PowerState,
    host: Type.Optional(Type.String({ description: 'where it runs; required unless Halted' })),
    cpus: Type.Integer({ minimum: 1 }),
    memory: Size,
    disks: Type.Array(DiskSpecSchema),
    cd: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'ISO in the CD drive; null for an empty drive' })),
    networks: Type.Array(Type.String(), { description: 'one VIF per entry, by network name' }),
    tags: Tags,
    autoPoweron: Type.Optional(Type.Boolean()),
    ha: Type.Optional(Type.Union([Type.Literal('restart'), Type.Literal('best-effort')])),
    created: Type.Optional(Age),
    uptime: Type.Optional(Age),
    snapshots: Type.Optional(Type.Array(Type.Object({ name: Name, taken: Age }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
)

const MessageSpecSchema = Type.Object(
  {
    name: Type.String({ description: 'e.g. VM_STARTED, or ALARM for perfmon alarms' }),
    object: Type.String({
      pattern: '^(pool|host|vm|sr|network):.+$',
      description: 'kind:name of the object it is about, e.g. "vm:web-01"',
    }),
    raised: Age,
    body: Type.Optional(Type.String()),
    alarm: Type.Optional(
      Type.Object(
        {
          metric: Type.String({ description: 'perfmon variable, e.g. cpu_usage' }),
          value: Type.Number({ description: 'the measured ratio, e.g. 0.95' }),
          level: Type.Number({ description: 'the trigger level' }),
        },
        { additionalProperties: false, description: 'writes a perfmon ALARM body' },
      ),
    ),
  },
  { additionalProperties: false },
)

const PoolSpecSchema = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    tags: Tags,
    defaultSr: Type.Optional(Type.String({ description: 'SR name' })),
    hosts: Type.Array(HostSpecSchema, { minItems: 1 }),
    networks: Type.Array(NetworkSpecSchema),
    srs: Type.Array(SrSpecSchema),
    templates: Type.Array(TemplateSpecSchema),
    vms: Type.Array(VmSpecSchema),
    messages: Type.Optional(Type.Array(MessageSpecSchema)),
  },
  { additionalProperties: false },
)

export const LabSpecSchema = Type.Object(
  {
    $comment: Type.Optional(Type.String()),
    pools: Type.Array(PoolSpecSchema, { minItems: 1 }),
  },
  { additionalProperties: false },
)

export type LabSpec = Static<typeof LabSpecSchema>
export type PoolSpec = Static<typeof PoolSpecSchema>
export type HostSpec = Static<typeof HostSpecSchema>
export type NetworkSpec = Static<typeof NetworkSpecSchema>
export type SrSpec = Static<typeof SrSpecSchema>
export type TemplateSpec = Static<typeof TemplateSpecSchema>
export type VmSpec = Static<typeof VmSpecSchema>
export type MessageSpec = Static<typeof MessageSpecSchema>

/** Checks the shape of a parsed lab description; `source` names it in the error. */
export function parseLabSpec(value: unknown, source: string): LabSpec {
  if (Value.Check(LabSpecSchema, value)) return value
  const problems = [...Value.Errors(LabSpecSchema, value)]
    .slice(0, 5)
    .map((error) => `${error.path || '/'}: ${error.message}`)
  throw new Error(`invalid lab description ${source}: ${problems.join('; ')}`)
}

export function loadLabSpec(file: string): LabSpec {
  return parseLabSpec(JSON.parse(readFileSync(file, 'utf8')) as unknown, file)
}
