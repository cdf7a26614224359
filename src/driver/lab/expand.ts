import type { XoRecord } from '../types.js'
import type { GpuGroupRecord, HostRecord, MessageRecord, NetworkRecord, PbdRecord, PifRecord, PoolRecord, SmRecord, SrRecord } from '../../model/records.js'
import { HOST_HARDWARE, HYPERVISOR, SR_DRIVERS } from './catalog.js'
import {
  ExpandContext,
  PoolScope,
  type ExpandOptions,
  type HostEntry,
  type NetworkEntry,
  type SrEntry,
} from './expand-context.js'
import { addVdi, dottedIpv4 } from './expand-devices.js'
import { networkDefaults } from './record-defaults.js'
import { addController, addTemplate, addVm } from './expand-vms.js'
import type { HostSpec, LabSpec, MessageSpec, NetworkSpec, PoolSpec, SrDriver, SrSpec } from './spec.js'
import { parseAge, parseSize } from './units.js'

export { DEFAULT_SEED, type ExpandOptions } from './expand-context.js'

const DAY = 86_400_000

/**
 * Turns a lab description into complete XO records with consistent links.
 * Ids derive from the seed and each object's place in the spec (pool and
 * name), so the same spec and seed always give the same ids.
 */
export function expandLab(spec: LabSpec, options: ExpandOptions): XoRecord[] {
  const context = new ExpandContext(options)
  for (const pool of spec.pools) expandPool(context, pool)
  return context.records
}

function expandPool(context: ExpandContext, spec: PoolSpec): void {
  const key = `pool:${spec.name}`
  const poolId = context.random.uuid(key)
  const record = context.add<PoolRecord>({
    type: 'pool',
    ...context.base(key, poolId),
    name_label: spec.name,
    name_description: spec.description ?? '',
    tags: [...(spec.tags ?? [])],
    master: '',
    HA_enabled: false,
    haSrs: [],
    haRebootVmOnInternalShutdown: true,
    auto_poweron: false,
    cpus: { cores: 0, sockets: 0 },
    current_operations: {},
    migrationCompression: false,
    otherConfig: { 'memory-ratio-hvm': '0.25', 'memory-ratio-pv': '0.25' },
    platform_version: HYPERVISOR.platformVersion,
    zstdSupported: true,
    vtpmSupported: true,
  })
  const pool = new PoolScope(spec.name, record)

  const masters = spec.hosts.filter((host) => host.master === true)
  if (masters.length > 1) throw new Error(`pool "${spec.name}" has ${masters.length} masters`)
  const master = masters[0] ?? spec.hosts[0]
  if (master === undefined) throw new Error(`pool "${spec.name}" has no host`)
  for (const host of spec.hosts) pool.hosts.set(host.name, addHost(context, pool, host))
  record.master = pool.resolve(pool.hosts, 'host', master.name, 'the pool').record.id
  record.cpus = {
    cores: spec.hosts.reduce((sum, host) => sum + host.cores, 0),
    sockets: spec.hosts.reduce((sum, host) => sum + host.sockets, 0),
  }

  for (const network of spec.networks) pool.networks.set(network.name, addNetwork(context, pool, network))
  for (const driver of new Set(spec.srs.map((sr) => sr.driver))) addSm(context, pool, driver)
  for (const sr of spec.srs) pool.srs.set(sr.name, addSr(context, pool, sr))
  const defaultSr =
    spec.defaultSr === undefined
      ? [...pool.srs.values()].find((sr) => sr.record.shared && sr.driver.contentType === 'user')
      : pool.resolve(pool.srs, 'SR', spec.defaultSr, 'defaultSr')
  if (defaultSr !== undefined) {
    Object.assign(record, { default_SR: defaultSr.record.id, crashDumpSr: defaultSr.record.id, suspendSr: defaultSr.record.id })
  }

  for (const template of spec.templates) pool.templates.set(template.name, addTemplate(context, pool, template))
  for (const vm of spec.vms) addVm(context, pool, vm)
  for (const message of spec.messages ?? []) addMessage(context, pool, message)
  addGpuGroup(context, pool)
}

/** XAPI keeps a GPU group per pool even without GPUs: vGPU placement starts from it. */
function addGpuGroup(context: ExpandContext, pool: PoolScope): void {
  const key = `gpu-group:${pool.name}`
  context.add<GpuGroupRecord>({
    type: 'gpuGroup',
    ...context.base(key, pool.id),
    allocation: 'depth_first',
    enabledVgpuTypes: [],
    gpuTypes: [],
    name_description: '',
    name_label: 'Group of lab GPUs',
    otherConfig: {},
    pgpus: [],
    supportedVgpuTypes: [],
    vgpus: [],
  })
}

function addHost(context: ExpandContext, pool: PoolScope, spec: HostSpec): HostEntry {
  const key = `host:${pool.name}/${spec.name}`
  const base = context.base(key, pool.id)
  const uptime = spec.uptime === undefined ? (5 + 55 * context.random.fraction(`uptime:${key}`)) * DAY : parseAge(spec.uptime)
  const startTime = context.secondsAgo(uptime)
  // the toolstack comes up a little after the host boots
  const agentStartTime = startTime + 75
  const iscsiIqn = `iqn.2024-01.lab.example:${base.uuid.slice(0, 8)}`
  const host = context.add<HostRecord>({
    type: 'host',
    ...base,
    name_label: spec.name,
    name_description: spec.description ?? 'Default install',
    tags: [...(spec.tags ?? [])],
    hostname: spec.name,
    address: spec.address,
    iscsiIqn,
    version: HYPERVISOR.version,
    productBrand: HYPERVISOR.productBrand,
    build: HYPERVISOR.version,
    license_params: { ...HYPERVISOR.license },
    license_server: { address: 'localhost', port: '27000' },
    license_expiry: null,
    zstdSupported: true,
    supplementalPacks: [],
    patches: [],
    certificates: [
      {
        fingerprint: context.random.hexBytes(`certificate:${key}`, 32, ':').toUpperCase(),
        notAfter: context.secondsAgo(-365 * DAY),
      },
    ],
    enabled: true,
    power_state: 'Running',
    powerOnMode: '',
    current_operations: {},
    rebootRequired: false,
    startTime,
    agentStartTime,
    multipathing: false,
    logging: {},
    otherConfig: { agent_start_time: `${agentStartTime}.`, boot_time: `${startTime}.`, iscsi_iqn: iscsiIqn },
    memory: { size: parseSize(spec.memory), usage: 0 },
    cpus: { cores: spec.cores, sockets: spec.sockets },
    CPUs: { cpu_count: String(spec.cores), socket_count: String(spec.sockets), threads_per_core: '2', ...HOST_HARDWARE.cpu },
    bios_strings: { ...HOST_HARDWARE.bios, 'system-serial-number': context.random.hexBytes(`serial:${key}`, 4, '').toUpperCase() },
    chipset_info: { iommu: true },
    hvmCapable: true,
    residentVms: [],
    PIFs: [],
    $PIFs: [],
    PCIs: [],
    $PCIs: [],
    PGPUs: [],
    $PGPUs: [],
    $PBDs: [],
  })
  const controller = addController(context, pool, host, spec)
  host.controlDomain = controller.id
  host.residentVms.push(controller.id)
  host.memory.usage = controller.memory.size
  return { spec, record: host }
}

function addNetwork(context: ExpandContext, pool: PoolScope, spec: NetworkSpec): NetworkEntry {
  const [address = '', prefixText = ''] = spec.subnet.split('/')
  const prefix = Number(prefixText)
  const octets = address.split('.').map(Number)
  if (!(prefix >= 8 && prefix <= 30) || octets.length !== 4 || octets.some((octet) => !(octet >= 0 && octet <= 255))) {
    throw new Error(`pool "${pool.name}": invalid subnet ${spec.subnet} for network "${spec.name}"`)
  }
  const mask = (0xffffffff << (32 - prefix)) >>> 0
  const base = (octets.reduce((ip, octet) => ip * 256 + octet, 0) & mask) >>> 0
  const record = context.add<NetworkRecord>({
    type: 'network',
    ...context.base(`network:${pool.name}/${spec.name}`, pool.id),
    name_label: spec.name,
    name_description: spec.description ?? '',
    tags: [...(spec.tags ?? [])],
    bridge: `xenbr${/\d+$/.exec(spec.device)?.[0] ?? '0'}`,
    MTU: spec.mtu ?? 1500,
    ...networkDefaults(),
  })
  const management = spec.management === true
  for (const host of pool.hosts.values()) {
    const key = `pif:${pool.name}/${host.spec.name}/${spec.name}`
    const pif = context.add<PifRecord>({
      type: 'PIF',
      ...context.base(key, pool.id),
      device: spec.device,
      deviceName: HOST_HARDWARE.nic,
      // an Intel OUI, as a real NIC would have
      mac: `3c:fd:fe:${context.random.hexBytes(`mac:${key}`, 3, ':')}`,
      mtu: record.MTU,
      vlan: -1,
      ip: management ? host.spec.address : '',
      netmask: management ? dottedIpv4(mask) : '',
      gateway: management ? dottedIpv4(base + 1) : '',
      dns: management ? dottedIpv4(base + 1) : '',
      ipv6: [],
      mode: management ? 'Static' : 'None',
      ipv6Mode: 'None',
      primaryAddressType: 'IPv4',
      attached: true,
      carrier: true,
      speed: HOST_HARDWARE.nicSpeed,
      management,
      physical: true,
      disallowUnplug: management,
      isBondMaster: false,
      isBondSlave: false,
      $host: host.record.id,
      $network: record.id,
    })
    record.PIFs.push(pif.id)
    host.record.PIFs.push(pif.id)
    host.record.$PIFs.push(pif.id)
  }
  // Guests get addresses from .100 on, clear of gateways and hosts.
  return { spec, record, base, prefix, nextHost: 100 }
}

function addSm(context: ExpandContext, pool: PoolScope, driver: SrDriver): void {
  const { sm, contentType } = SR_DRIVERS[driver]
  context.add<SmRecord>({
    type: 'SM',
    ...context.base(`sm:${pool.name}/${driver}`, pool.id),
    name_label: sm.name_label,
    name_description: sm.name_description,
    SM_type: driver,
    vendor: 'Citrix Systems Inc',
    configuration: { ...sm.configuration },
    features: { ...sm.features },
    driver_filename: sm.driver_filename,
    required_cluster_stack: [],
    supported_image_formats: contentType === 'iso' ? [] : ['vhd'],
  })
}

function addSr(context: ExpandContext, pool: PoolScope, spec: SrSpec): SrEntry {
  const where = `SR "${spec.name}"`
  const driver = SR_DRIVERS[spec.driver]
  const host = spec.host === undefined ? undefined : pool.resolve(pool.hosts, 'host', spec.host, where)
  if (driver.shared !== (host === undefined)) {
    throw new Error(`pool "${pool.name}": ${where} (${spec.driver}) ${driver.shared ? 'is shared and takes no host' : 'is local and needs a host'}`)
  }
  const key = `sr:${pool.name}/${spec.name}`
  const record = context.add<SrRecord>({
    type: 'SR',
    ...context.base(key, pool.id),
    name_label: spec.name,
    name_description: spec.description ?? '',
    tags: [...(spec.tags ?? [])],
    SR_type: spec.driver,
    content_type: driver.contentType,
    shared: host === undefined,
    size: parseSize(spec.size),
    physical_usage: 0,
    usage: 0,
    ...(driver.allocation === undefined ? {} : { allocationStrategy: driver.allocation }),
    inMaintenanceMode: false,
    current_operations: {},
    other_config: {},
    sm_config: {},
    VDIs: [],
    $PBDs: [],
    $container: host?.record.id ?? pool.id,
  })
  const deviceConfig = driver.deviceConfig(spec.location ?? driver.defaultLocation(spec.name))
  for (const pluggedOn of host === undefined ? pool.hosts.values() : [host]) {
    const pbd = context.add<PbdRecord>({
      type: 'PBD',
      ...context.base(`pbd:${pool.name}/${spec.name}/${pluggedOn.spec.name}`, pool.id),
      attached: true,
      host: pluggedOn.record.id,
      SR: record.id,
      device_config: { ...deviceConfig },
      otherConfig: {},
    })
    record.$PBDs.push(pbd.id)
    pluggedOn.record.$PBDs.push(pbd.id)
  }
  const entry: SrEntry = { spec, record, driver, host }
  for (const iso of spec.isos ?? []) {
    if (driver.contentType !== 'iso') throw new Error(`pool "${pool.name}": ${where} is not an ISO SR but lists ISOs`)
    pool.isos.set(iso.name, addVdi(context, pool, entry, `${key}/iso/${iso.name}`, iso.name, parseSize(iso.size)))
  }
  return entry
}

/** The body XAPI's perfmon writes for an ALARM message (see messageToAlarm). */
const perfmonBody = ({ metric, value, level }: { metric: string; value: number; level: number }): string =>
  `value: ${value}\nconfig:\n<variable>\n\t<name value="${metric}"/>\n\t<alarm_trigger_level value="${level}"/>\n` +
  '\t<alarm_trigger_period value="60"/>\n\t<alarm_auto_inhibit_period value="3600"/>\n</variable>\n'

function addMessage(context: ExpandContext, pool: PoolScope, spec: MessageSpec): void {
  const where = `message ${spec.name} on ${spec.object}`
  if (spec.alarm !== undefined && spec.name !== 'ALARM') throw new Error(`pool "${pool.name}": ${where} has an alarm but is not an ALARM`)
  context.add<MessageRecord>({
    type: 'message',
    ...context.base(`message:${pool.name}/${spec.name}/${spec.object}/${spec.raised}`, pool.id),
    name: spec.name,
    body: spec.alarm === undefined ? (spec.body ?? '') : perfmonBody(spec.alarm),
    time: context.secondsAgo(parseAge(spec.raised)),
    $object: messageTarget(pool, spec.object, where).uuid,
  })
}

/** The object a `kind:name` reference names. */
function messageTarget(pool: PoolScope, reference: string, where: string): { readonly uuid: string } {
  const separator = reference.indexOf(':')
  const kind = reference.slice(0, separator)
  const name = reference.slice(separator + 1)
  switch (kind) {
    case 'pool':
      if (name !== pool.name) throw new Error(`pool "${pool.name}": ${where} names another pool`)
      return pool.record
    case 'host':
      return pool.resolve(pool.hosts, 'host', name, where).record
    case 'vm':
      return pool.resolve(pool.vms, 'VM', name, where)
    case 'sr':
      return pool.resolve(pool.srs, 'SR', name, where).record
    default:
      return pool.resolve(pool.networks, 'network', name, where).record
  }
}
