import { Type, type TObject } from '@sinclair/typebox'

/**
 * The REST API's vocabulary of changes: each action's parameters, the
 * privilege it needs (spec 2's catalogue), which parameters name other objects
 * (resolved before any task starts, so a missing one is a synchronous 404),
 * and what it creates. Drivers implement these names; the routes, their
 * validation and the OpenAPI document are generated from this table.
 */
export interface ActionSpec {
  readonly name: string
  readonly summary: string
  /** the action part of the privilege; the resource is the collection's */
  readonly privilege: string
  readonly params: TObject
  /** parameter path → XO type of the object it names; `a[].b` is field `b` of each item of array `a` */
  readonly refs?: Readonly<Record<string, string>>
  /** parameter path → the action the caller needs on the object it names (default `read`) */
  readonly refPrivileges?: Readonly<Record<string, string>>
  /** XO type of the object it creates, if any */
  readonly creates?: string
  /**
   * parameter path → objects the named object lists in `field`, and the
   * action the caller needs on each of them (the reference guards the pool's
   * management_reconfigure by `update:management` on the network's PIFs)
   */
  readonly listedRefs?: Readonly<Record<string, { readonly field: string; readonly type: string; readonly action: string }>>
  /** a privilege also needed on a resource with the body standing for the object, as the reference asks `network:create` of network creations */
  readonly bodyPrivilege?: { readonly resource: string; readonly action: string }
}

const none = Type.Object({}, { additionalProperties: false })
const params = (properties: Parameters<typeof Type.Object>[0]): TObject =>
  Type.Object(properties, { additionalProperties: false })
const Id = (description: string) => Type.String({ minLength: 1, maxLength: 200, description })
const Label = Type.String({ minLength: 1, maxLength: 255 })

const NETWORK_CREATE = { resource: 'network', action: 'create' } as const

const simple = (name: string, privilege: string, summary: string): ActionSpec => ({ name, privilege, summary, params: none })

/** The parameters of `create_vm`, exported so that drivers implementing it take their type from here. */
export const CreateVmParams = Type.Object(
  {
    name_label: Label,
    template: Id('VM template id'),
    name_description: Type.Optional(Type.String({ maxLength: 1024 })),
    cpus: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
    memory: Type.Optional(Type.Integer({ minimum: 16 * 1024 * 1024, description: 'bytes' })),
    auto_poweron: Type.Optional(Type.Boolean()),
    boot: Type.Optional(Type.Boolean({ description: 'start the VM once created' })),
    vdis: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name_label: Label,
            size: Type.Integer({ minimum: 1, description: 'bytes' }),
            sr: Type.Optional(Id('SR to create the disk on (default: the pool default SR)')),
            name_description: Type.Optional(Type.String({ maxLength: 1024 })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 16 },
      ),
    ),
    vifs: Type.Optional(
      Type.Array(
        Type.Object(
          {
            network: Id('network id'),
            mac: Type.Optional(Type.String({ pattern: '^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$' })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 8 },
      ),
    ),
  },
  { additionalProperties: false },
)

export const actionsByType: Readonly<Record<string, readonly ActionSpec[]>> = {
  VM: [
    {
      name: 'start',
      privilege: 'start',
      summary: 'Start a halted VM, on the given host or one with enough free memory',
      params: params({ hostId: Type.Optional(Id('host to start the VM on')) }),
      refs: { hostId: 'host' },
      refPrivileges: { hostId: 'allow-vm' },
    },
    simple('clean_shutdown', 'shutdown:clean', 'Shut the VM down cleanly'),
    simple('hard_shutdown', 'shutdown:hard', 'Power the VM off'),
    simple('clean_reboot', 'reboot:clean', 'Reboot the VM cleanly'),
    simple('hard_reboot', 'reboot:hard', 'Reset the VM'),
    simple('pause', 'pause', 'Pause a running VM'),
    simple('unpause', 'unpause', 'Unpause a paused VM'),
    simple('suspend', 'suspend', 'Suspend a running VM to disk'),
    simple('resume', 'resume', 'Resume a suspended VM'),
    {
      name: 'snapshot',
      privilege: 'snapshot',
      summary: 'Snapshot the VM and its disks (constant time: no disk content is copied)',
      params: params({ name_label: Type.Optional(Label) }),
      creates: 'VM-snapshot',
    },
    {
      name: 'clone',
      privilege: 'clone',
      summary: 'Fast-clone the VM and its disks (constant time)',
      params: params({ name_label: Type.Optional(Label) }),
      creates: 'VM',
    },
    {
      name: 'revert_snapshot',
      privilege: 'revert-snapshot',
      summary: 'Revert the VM to one of its snapshots',
      params: params({ snapshotId: Id('a snapshot of this VM') }),
      refs: { snapshotId: 'VM-snapshot' },
    },
    {
      name: 'migrate',
      privilege: 'migrate-send',
      summary: 'Move a running VM to another host of its pool',
      params: params({ hostId: Id('destination host') }),
      refs: { hostId: 'host' },
      refPrivileges: { hostId: 'migrate-receive' },
    },
  ],
  host: [
    simple('disable', 'disable', 'Stop new VMs from starting on the host'),
    simple('enable', 'enable', 'Allow VMs to start on the host again'),
    simple('clean_reboot', 'reboot:clean', 'Evacuate the running VMs to other hosts, then reboot'),
    simple('clean_shutdown', 'shutdown:clean', 'Evacuate the running VMs to other hosts, then shut down'),
    simple('start', 'start', 'Power on a halted host'),
    simple('restart_toolstack', 'restart-toolstack', 'Restart the toolstack; the VMs keep running'),
    simple('scan_pifs', 'scan-pifs', 'Look for new physical interfaces'),
    simple('emergency_shutdown', 'shutdown:emergency', 'Power off the running VMs of the host, then the host'),
    simple('smart_reboot', 'reboot:smart', 'Suspend the running VMs, reboot, then resume them on the host'),
    simple('detach', 'detach', 'Eject a running member host holding no VM or local SR from its pool'),
    simple('forget', 'forget', 'Remove a halted member host holding no VM or local SR from its pool'),
    {
      name: 'management_reconfigure',
      privilege: 'restart-toolstack',
      summary: 'Move the management interface to another PIF of the host (its toolstack restarts)',
      params: params({ pif: Id('a plugged PIF of this host') }),
      refs: { pif: 'PIF' },
      refPrivileges: { pif: 'update:management' },
    },
  ],
  pool: [
    {
      name: 'create_vm',
      privilege: 'create:vm',
      summary: 'Create a VM from a template, with its disks and network interfaces',
      params: CreateVmParams,
      refs: { template: 'VM-template', 'vdis[].sr': 'SR', 'vifs[].network': 'network' },
      refPrivileges: { template: 'instantiate' },
      creates: 'VM',
    },
    simple('emergency_shutdown', 'emergency-shutdown', 'Hard-shut down every running VM of the pool, then its hosts'),
    simple('rolling_reboot', 'rolling-reboot', 'Reboot the hosts one by one, evacuating each first'),
    { name: 'create_internal_network', privilege: 'create:network', summary: 'Create a network with no PIF, for VMs of one host to talk to each other', params: params({ name: Label, description: Type.Optional(Type.String({ maxLength: 1024 })), mtu: Type.Optional(Type.Integer({ minimum: 68, maximum: 9000 })) }), creates: 'network', bodyPrivilege: NETWORK_CREATE },
    {
      name: 'create_network',
      privilege: 'create:network',
      summary: 'Create a network of VLAN PIFs tagged `vlan` on the device of a PIF, on every host of the pool that has it',
      params: params({
        name: Label,
        description: Type.Optional(Type.String({ maxLength: 1024 })),
        mtu: Type.Optional(Type.Integer({ minimum: 68, maximum: 9000 })),
        nbd: Type.Optional(Type.Boolean({ description: 'offer NBD disk access over TLS on it' })),
        pif: Id('a physical PIF of the pool: its device carries the network'),
        vlan: Type.Integer({ minimum: 0, maximum: 4094, description: 'the tag of the new VLAN PIFs' }),
      }),
      refs: { pif: 'PIF' },
      creates: 'network',
      bodyPrivilege: NETWORK_CREATE,
    },
    {
      name: 'create_bonded_network',
      privilege: 'create:network',
      summary: 'Bond the devices of some PIFs of one host, on every host of the pool, into a new network',
      params: params({
        name: Label,
        description: Type.Optional(Type.String({ maxLength: 1024 })),
        mtu: Type.Optional(Type.Integer({ minimum: 68, maximum: 9000 })),
        pifIds: Type.Array(Id('a physical PIF to bond'), { minItems: 2, maxItems: 4, uniqueItems: true }),
        bondMode: Type.Union([Type.Literal('balance-slb'), Type.Literal('active-backup'), Type.Literal('lacp')]),
      }),
      refs: { 'pifIds[]': 'PIF' },
      creates: 'network',
      bodyPrivilege: NETWORK_CREATE,
    },
    {
      name: 'management_reconfigure',
      privilege: 'read',
      summary: 'Move every host\u2019s management interface to its PIF on the network (their toolstacks restart)',
      params: params({ network: Id('a network of the pool with a configured PIF on every host') }),
      refs: { network: 'network' },
      listedRefs: { network: { field: 'PIFs', type: 'PIF', action: 'update:management' } },
    },
    {
      name: 'add_host',
      privilege: 'add-host',
      summary: 'Join a host, alone in its pool and holding no VM, to this pool (XAPI\u2019s pool.join)',
      params: params({
        host: Id('the joining host'),
        force: Type.Optional(Type.Boolean({ description: 'join though its version differs from the pool\u2019s' })),
      }),
      refs: { host: 'host' },
      refPrivileges: { host: 'join-pool' },
    },
    {
      name: 'rolling_update',
      privilege: 'rolling-update',
      summary: 'Install the missing patches host by host, the master last, each evacuated and rebooted',
      params: params({ shutdownPinnedVms: Type.Optional(Type.Boolean({ description: 'shut down VMs that cannot leave their host around its reboot, instead of refusing' })) }),
    },
  ],
  SR: [
    simple('scan', 'scan', 'Rescan the SR for disks'),
    simple('reclaim_space', 'reclaim-space', 'Give freed blocks back to the storage'),
    simple('forget', 'forget', 'Remove the SR from the pool, its disks\u2019 content left on the storage'),
  ],
  PBD: [
    simple('plug', 'plug', 'Connect the SR to the host'),
    simple('unplug', 'unplug', 'Disconnect the SR from the host: its disks cannot be used there'),
  ],
  VBD: [
    simple('connect', 'connect', 'Plug the drive into its running VM'),
    simple('disconnect', 'disconnect', 'Unplug the drive from its running VM'),
  ],
  VIF: [
    simple('connect', 'connect', 'Plug the interface into its running VM'),
    simple('disconnect', 'disconnect', 'Unplug the interface from its running VM'),
  ],
  VDI: [
    {
      name: 'migrate',
      privilege: 'migrate-send',
      summary: 'Move the disk to another SR (its id changes)',
      params: params({ srId: Id('destination SR') }),
      refs: { srId: 'SR' },
      refPrivileges: { srId: 'migrate-receive' },
      creates: 'VDI',
    },
  ],
}

/** What `POST /<collection>` creates: the body (named as the reference's REST API names it) and the objects it names. The privilege is `create` on the collection's resource. */
export interface CreationSpec {
  readonly summary: string
  readonly params: TObject
  readonly refs: Readonly<Record<string, string>>
  /** parameter path → the action the caller needs on the object it names (default `read`) */
  readonly refPrivileges?: Readonly<Record<string, string>>
}

const StringMapParam = Type.Record(Type.String(), Type.String({ maxLength: 1024 }), { maxProperties: 64 })

export const creationsByType: Readonly<Record<string, CreationSpec>> = {
  VBD: {
    summary: 'Plug a disk (or an empty CD drive) into a VM: unplugged at first, connect it on a running VM',
    params: params({
      VM: Id('VM id'),
      VDI: Type.Optional(Id('VDI id; none for an empty CD drive')),
      type: Type.Optional(Type.Union([Type.Literal('Disk'), Type.Literal('CD')])),
      mode: Type.Optional(Type.Union([Type.Literal('RW'), Type.Literal('RO')])),
      bootable: Type.Optional(Type.Boolean()),
      userdevice: Type.Optional(Type.String({ pattern: '^(\\d{1,2}|autodetect)$', description: 'slot number (default: the first free one)' })),
    }),
    refs: { VM: 'VM', VDI: 'VDI' },
  },
  VIF: {
    summary: 'Give a VM an interface on a network: unplugged at first, connect it on a running VM',
    params: params({
      vmId: Id('VM id'),
      networkId: Id('network id'),
      MAC: Type.Optional(Type.String({ pattern: '^(([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2})?$', description: 'default (or empty): generated' })),
      device: Type.Optional(Type.String({ pattern: '^\\d{1,2}$', description: 'interface index (default: the first free one)' })),
      MTU: Type.Optional(Type.Integer({ minimum: 68, maximum: 65535 })),
      locking_mode: Type.Optional(
        Type.Union([Type.Literal('network_default'), Type.Literal('locked'), Type.Literal('unlocked'), Type.Literal('disabled')]),
      ),
      ipv4_allowed: Type.Optional(Type.Array(Type.String({ format: 'ipv4' }), { maxItems: 64 })),
      ipv6_allowed: Type.Optional(Type.Array(Type.String({ format: 'ipv6' }), { maxItems: 64 })),
      other_config: Type.Optional(StringMapParam),
    }),
    refs: { vmId: 'VM', networkId: 'network' },
  },
  SR: {
    summary: 'Create an SR through a host: connected to every host of the pool if its type is shared, else to that host',
    params: params({
      hostId: Id('host to create it through'),
      name_label: Label,
      name_description: Type.Optional(Type.String({ maxLength: 1024 })),
      SR_type: Type.String({ minLength: 1, maxLength: 64, description: 'driver: nfs, lvmoiscsi, ext, lvm, iso, \u2026' }),
      device_config: Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.String({ maxLength: 1024 }), { maxProperties: 32, description: 'keys depend on SR_type, e.g. nfs: server, serverpath' }),
      size: Type.Optional(Type.Integer({ minimum: 0, description: 'bytes' })),
      content_type: Type.Optional(Type.String({ maxLength: 64 })),
      sm_config: Type.Optional(StringMapParam),
    }),
    refs: { hostId: 'host' },
  },
  VDI: {
    summary: 'Create an empty disk on an SR (it reads as zeros)',
    params: params({
      srId: Id('SR id'),
      name_label: Label,
      name_description: Type.Optional(Type.String({ maxLength: 1024 })),
      virtual_size: Type.Integer({ minimum: 1, description: 'bytes' }),
    }),
    refs: { srId: 'SR' },
    refPrivileges: { srId: 'import:vdi' },
  },
}

const NameLabel = Type.String({ minLength: 1, maxLength: 255 })
const Description = Type.String({ maxLength: 2048 })
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 100 })
const patch = (properties: Parameters<typeof Type.Object>[0]): TObject =>
  Type.Object(properties, { additionalProperties: false, minProperties: 1 })
const Ipv4 = Type.String({ format: 'ipv4' })
const Ipv6 = Type.String({ format: 'ipv6' })

const namePatch = patch({
  name_label: Type.Optional(NameLabel),
  name_description: Type.Optional(Description),
})

/**
 * Fields PATCH accepts per type. VMs use camelCase as the reference does;
 * the other types use the record's own names. Anything else is a 422.
 */
export const patchByType: Readonly<Record<string, TObject>> = {
  VM: patch({
    nameLabel: Type.Optional(NameLabel),
    nameDescription: Type.Optional(Description),
    cpus: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
    memory: Type.Optional(Type.Integer({ minimum: 16 * 1024 * 1024, description: 'bytes' })),
    autoPoweron: Type.Optional(Type.Boolean()),
    highAvailability: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('restart'), Type.Literal('best-effort')])),
    startDelay: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400 })),
    notes: Type.Optional(Type.String({ maxLength: 2048 })),
    tags: Type.Optional(Tags),
  }),
  VDI: patch({
    name_label: Type.Optional(NameLabel),
    name_description: Type.Optional(Description),
    size: Type.Optional(Type.Integer({ minimum: 1, description: 'bytes; grow only' })),
  }),
  VIF: patch({
    lockingMode: Type.Optional(
      Type.Union([Type.Literal('network_default'), Type.Literal('locked'), Type.Literal('unlocked'), Type.Literal('disabled')]),
    ),
    allowedIpv4Addresses: Type.Optional(Type.Array(Ipv4, { maxItems: 64 })),
    allowedIpv6Addresses: Type.Optional(Type.Array(Ipv6, { maxItems: 64 })),
    rateLimit: Type.Optional(Type.Union([Type.Integer({ minimum: 1, description: 'kB/s' }), Type.Null()])),
    txChecksumming: Type.Optional(Type.Boolean()),
  }),
  network: namePatch,
  SR: namePatch,
  host: namePatch,
  pool: namePatch,
}

/** Types whose objects DELETE destroys. */
export const deletableTypes: readonly string[] = ['VM', 'VM-snapshot', 'VDI', 'VDI-snapshot', 'network', 'VBD', 'VIF', 'VM-template', 'SR']

/** Types with a `tags` collection addressable item by item. */
export const taggableTypes = [
  'VM',
  'VM-snapshot',
  'VM-template',
  'VM-controller',
  'host',
  'pool',
  'SR',
  'VDI',
  'VDI-snapshot',
  'network',
] as const

export type TaggableType = (typeof taggableTypes)[number]

export const taggableType = (type: string): TaggableType | undefined => taggableTypes.find((candidate) => candidate === type)
