import type {
  HostRecord,
  VdiRecord,
  VifRecord,
  VmControllerRecord,
  VmRecord,
  VmSnapshotRecord,
  VmTemplateRecord,
} from '../../model/records.js'
import { GUEST_BIOS_STRINGS, OS_PROFILES, type OsProfile } from './catalog.js'
import { addVbd, addVdi, addVdiSnapshot, addVif, allocateAddress } from './expand-devices.js'
import type { ExpandContext, NetworkEntry, PoolScope, SrEntry, TemplateEntry } from './expand-context.js'
import { vmLinkDefaults, type RecordBase } from './record-defaults.js'
import type { HostSpec, TemplateSpec, VmSpec } from './spec.js'
import { GiB, MiB, parseAge, parseSize } from './units.js'

type VmCommon = Omit<VmControllerRecord, keyof RecordBase | 'type'>
type VmRequired = Pick<VmCommon, 'name_label' | 'name_description' | 'power_state' | '$container'>

/** The VM fields as XAPI leaves them on a fresh, never-booted VM. */
function vmCommon(fields: VmRequired & Partial<VmCommon>, cpus: number, memory: number): VmCommon {
  // named first so that they lead the record's JSON
  const { name_label, name_description, power_state, ...rest } = fields
  return {
    name_label,
    name_description,
    power_state,
    tags: [],
    other: {},
    current_operations: {},
    blockedOperations: {},
    auto_poweron: false,
    high_availability: '',
    startDelay: 0,
    startTime: null,
    CPUs: { max: cpus, number: cpus },
    memory: { dynamic: [memory, memory], static: [Math.min(memory, 512 * MiB), memory], size: memory },
    boot: {},
    bios_strings: {},
    virtualizationMode: 'hvm',
    viridian: false,
    secureBoot: false,
    isFirmwareSupported: true,
    expNestedHvm: false,
    isNestedVirtEnabled: false,
    hasVendorDevice: false,
    needsVtpm: false,
    addresses: {},
    os_version: null,
    xenStoreData: {},
    ...vmLinkDefaults(),
    ...rest,
  }
}

type HvmPlatform = Pick<VmCommon, 'boot' | 'vga' | 'videoram' | 'viridian' | 'hasVendorDevice'>

function hvmPlatform(os: OsProfile): HvmPlatform {
  const windows = os.family === 'windows'
  return {
    boot: { firmware: os.firmware, order: 'cdn' },
    vga: 'std',
    videoram: 8,
    viridian: windows,
    hasVendorDevice: windows,
  }
}

/** dom0 takes 1 GiB plus 5% of the host's memory, up to 8 GiB (XCP-ng installer default). */
const controlDomainMemory = (hostMemory: number): number =>
  Math.min(8 * GiB, Math.round((GiB + hostMemory * 0.05) / MiB) * MiB)

export function addController(context: ExpandContext, pool: PoolScope, host: HostRecord, spec: HostSpec): VmControllerRecord {
  const memory = controlDomainMemory(parseSize(spec.memory))
  const cpus = Math.min(16, spec.cores)
  return context.add({
    type: 'VM-controller',
    ...context.base(`controller:${pool.name}/${spec.name}`, pool.id),
    ...vmCommon(
      {
        name_label: `Control domain on host: ${host.hostname}`,
        name_description: 'The domain which manages physical devices and manages other domains',
        power_state: 'Running',
        startTime: host.startTime,
        other: { is_system_domain: 'true' },
        virtualizationMode: 'pv',
        PV_args: '',
        affinityHost: host.id,
        $container: host.id,
      },
      cpus,
      memory,
    ),
  })
}

export function addTemplate(context: ExpandContext, pool: PoolScope, spec: TemplateSpec): TemplateEntry {
  const os = OS_PROFILES[spec.os]
  if (os === undefined) throw new Error(`pool "${pool.name}": unknown os "${spec.os}" in template "${spec.name}"`)
  const isDefault = spec.default ?? true
  // Default templates have the same uuid in every pool, so XO scopes their id by pool.
  const shared = context.base(isDefault ? `default-template:${spec.name}` : `template:${pool.name}/${spec.name}`, pool.id)
  const base = isDefault ? { ...shared, id: `${pool.id}-${shared.uuid}` } : shared
  const installMethods = [...os.installMethods]
  const record = context.add<VmTemplateRecord>({
    type: 'VM-template',
    ...base,
    ...vmCommon(
      {
        name_label: spec.name,
        name_description: spec.description ?? 'Template which allows VM installation from install media',
        power_state: 'Halted',
        installTime: null,
        other: {
          ...(isDefault ? { default_template: 'true' } : {}),
          'install-methods': installMethods.join(','),
          ...(os.arch === undefined ? {} : { 'install-arch': os.arch }),
          ...(os.family === 'linux' ? { linux_template: 'true' } : {}),
        },
        ...hvmPlatform(os),
        $container: pool.id,
      },
      spec.cpus,
      parseSize(spec.memory),
    ),
    isDefaultTemplate: isDefault,
    template_info: {
      ...(os.arch === undefined ? {} : { arch: os.arch }),
      disks: [{ bootable: true, size: parseSize(spec.disk), SR: '', type: 'system' }],
      install_methods: installMethods,
    },
  })
  return { spec, record, os }
}

interface GuestDisk {
  readonly vdi: VdiRecord
  readonly sr: SrEntry
}

interface GuestVif {
  readonly vif: VifRecord
  readonly network: NetworkEntry
}

/** The CD drive sits at userdevice 3 (xvdd), as XAPI places it. */
const CD_POSITION = 3

export function addVm(context: ExpandContext, pool: PoolScope, spec: VmSpec): VmRecord {
  const where = `VM "${spec.name}"`
  const key = `vm:${pool.name}/${spec.name}`
  const template = pool.resolve(pool.templates, 'template', spec.template, where)
  const running = spec.power === 'Running' || spec.power === 'Paused'
  const host = spec.host === undefined ? undefined : pool.resolve(pool.hosts, 'host', spec.host, where)
  if ((host === undefined) !== (spec.power === 'Halted')) {
    throw new Error(`pool "${pool.name}": ${where} is ${spec.power}: it needs a host exactly when it is not Halted`)
  }
  const srs = spec.disks.map((disk, i) => pool.resolve(pool.srs, 'SR', disk.sr, `disk ${i} of ${where}`))
  const localHosts = new Set(srs.flatMap((sr) => (sr.host === undefined ? [] : [sr.host])))
  if (localHosts.size > 1 || (host !== undefined && localHosts.size === 1 && !localHosts.has(host))) {
    throw new Error(`pool "${pool.name}": ${where} has disks on local SRs it cannot reach from one host`)
  }
  // A halted VM lives in the pool, unless a disk pins it to the host of a local SR.
  const haltedContainer = [...localHosts][0]?.record.id ?? pool.id

  const base = context.base(key, pool.id)
  const memory = parseSize(spec.memory)
  const created = context.now - parseAge(spec.created ?? '30 d')
  const settings: VmSettings = {
    name_label: spec.name,
    name_description: spec.description ?? '',
    tags: spec.tags ?? [],
    other: { base_template_name: template.spec.name, ...(spec.autoPoweron === true ? { auto_poweron: 'true' } : {}) },
    creation: {
      date: new Date(created).toISOString(),
      template: template.record.id,
      user: context.creatorId,
      creator: context.creatorId,
    },
    auto_poweron: spec.autoPoweron ?? false,
    high_availability: spec.ha ?? '',
    installTime: Math.floor(created / 1000),
    ...hvmPlatform(template.os),
    bios_strings: { ...GUEST_BIOS_STRINGS, 'system-serial-number': base.uuid },
  }

  const vm: VmRecord = context.add({
    type: 'VM',
    ...base,
    ...vmCommon(
      { ...copySettings(settings), power_state: spec.power, $container: host?.record.id ?? haltedContainer },
      spec.cpus,
      memory,
    ),
    vulnerabilities: { xsa468: false },
  })
  if (spec.power !== 'Halted') vm.os_version = { ...template.os.osVersion }
  if (running) {
    const uptime =
      spec.uptime === undefined ? (1 + 40 * context.random.fraction(`uptime:${key}`)) * 86_400_000 : parseAge(spec.uptime)
    vm.startTime = context.secondsAgo(uptime)
    vm.memory.usage = Math.round((memory * (0.25 + 0.6 * context.random.fraction(`memory:${key}`))) / 4096) * 4096
    Object.assign(vm, guestAgentFields(template.os))
  }
  if (host !== undefined) {
    host.record.residentVms.push(vm.id)
    if (running) host.record.memory.usage += memory
  }

  const disks = spec.disks.map((disk, i): GuestDisk => {
    const sr = srs[i] as SrEntry
    const vdi = addVdi(context, pool, sr, `${key}/disk/${i}`, disk.name ?? `${spec.name} disk ${i}`, parseSize(disk.size))
    addVbd(context, pool, { key: `${key}/vbd/${i}`, vm, position: i, vdi, attached: running })
    return { vdi, sr }
  })
  if (spec.cd !== undefined) {
    const iso = spec.cd === null ? undefined : pool.resolve(pool.isos, 'ISO', spec.cd, where)
    addVbd(context, pool, { key: `${key}/cd`, vm, position: CD_POSITION, vdi: iso, attached: running, cd: true })
  }
  const vifs = spec.networks.map((networkName, i): GuestVif => {
    const network = pool.resolve(pool.networks, 'network', networkName, where)
    const mac = context.random.mac(`mac:${key}/vif/${i}`)
    const vif = addVif(context, pool, { key: `${key}/vif/${i}`, vm, device: i, network, mac, attached: running })
    if (spec.power === 'Running') vm.addresses[`${i}/ipv4/0`] = allocateAddress(network, where)
    return { vif, network }
  })
  const mainIp = vm.addresses['0/ipv4/0']
  if (mainIp !== undefined) vm.mainIpAddress = mainIp

  // Oldest first, so that each snapshot's parent is the one before it and the VM's parent is the latest.
  const snapshots = [...(spec.snapshots ?? [])].sort((a, b) => parseAge(b.taken) - parseAge(a.taken))
  let parent: string | undefined
  for (const { name, taken } of snapshots) {
    const snapshot = addSnapshot(context, pool, {
      key: `${key}/snapshot/${name}`,
      vm,
      settings: { ...settings, name_label: name },
      container: haltedContainer,
      time: context.secondsAgo(parseAge(taken)),
      parent,
      disks,
      vifs,
    })
    parent = snapshot.id
  }
  if (parent !== undefined) vm.parent = parent
  pool.vms.set(spec.name, vm)
  return vm
}

/** What a VM is configured as, as opposed to its runtime state; snapshots copy it. */
type VmSettings = HvmPlatform &
  Pick<VmCommon, 'name_label' | 'name_description' | 'tags' | 'other' | 'auto_poweron' | 'high_availability' | 'installTime' | 'bios_strings'> & {
    creation: NonNullable<VmCommon['creation']>
  }

/** A copy whose nested objects are not shared, so that no two records alias one array or map. */
const copySettings = (settings: VmSettings): VmSettings => ({
  ...settings,
  tags: [...settings.tags],
  other: { ...settings.other },
  creation: { ...settings.creation },
  boot: { ...settings.boot },
  bios_strings: { ...settings.bios_strings },
})

export function guestAgentFields(os: OsProfile): Partial<VmRecord> {
  const [major = '0', minor = '0'] = os.pvDriversVersion.split('.')
  return {
    managementAgentDetected: true,
    pvDriversDetected: true,
    pvDriversVersion: os.pvDriversVersion,
    pvDriversUpToDate: true,
    xenTools: { major: Number(major), minor: Number(minor), version: Number(`${major}.${minor}`) },
  }
}

interface SnapshotParams {
  readonly key: string
  readonly vm: VmRecord
  readonly settings: VmSettings
  readonly container: string
  readonly time: number
  readonly parent: string | undefined
  readonly disks: readonly GuestDisk[]
  readonly vifs: readonly GuestVif[]
}

/** A disk-only snapshot: a halted copy of the VM's settings, a VDI-snapshot per disk, and copies of its VIFs. */
function addSnapshot(context: ExpandContext, pool: PoolScope, params: SnapshotParams): VmSnapshotRecord {
  const { key, vm, settings, container, time, parent, disks, vifs } = params
  const snapshot = context.add<VmSnapshotRecord>({
    type: 'VM-snapshot',
    ...context.base(key, pool.id),
    ...vmCommon(
      {
        ...copySettings(settings),
        power_state: 'Halted',
        $container: container,
        ...(parent === undefined ? {} : { parent }),
      },
      vm.CPUs.max,
      vm.memory.size,
    ),
    snapshot_time: time,
    $snapshot_of: vm.id,
  })
  vm.snapshots.push(snapshot.id)
  disks.forEach(({ vdi, sr }, i) => {
    const vdiSnapshot = addVdiSnapshot(context, pool, sr, vdi, `${key}/disk/${i}`, time)
    addVbd(context, pool, { key: `${key}/vbd/${i}`, vm: snapshot, position: i, vdi: vdiSnapshot, attached: false })
  })
  vifs.forEach(({ vif, network }, i) => {
    addVif(context, pool, { key: `${key}/vif/${i}`, vm: snapshot, device: i, network, mac: vif.MAC, attached: false })
  })
  return snapshot
}
