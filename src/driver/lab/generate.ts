import { DEFAULT_SEED } from './expand-context.js'
import { LabRandom } from './random.js'
import type { HostSpec, LabSpec, MessageSpec, PoolSpec, SrSpec, TemplateSpec, VmSpec } from './spec.js'

export interface GenerateOptions {
  readonly vms: number
  readonly hosts: number
  readonly seed?: number
}

const VM_NETWORK = 'VM network'
const BACKEND_NETWORK = 'Backend network'
const STORAGE_NETWORK = 'Storage network'
const ISO_SR = 'ISO library'

/** Up to this many hosts, a lab is one pool, as the small labs of tests and demos are. */
const SINGLE_POOL_HOSTS = 16
/** Sizes real installations report: mostly 8 to 32 hosts, a few full pools of 64, the most XCP-ng and XenServer allow. */
const POOL_SIZES = [8, 16, 16, 24, 32, 32, 48, 64]

const TEMPLATES: readonly TemplateSpec[] = [
  { name: 'Debian Bookworm 12', os: 'debian-12', cpus: 1, memory: '2 GiB', disk: '10 GiB' },
  { name: 'Ubuntu Noble Numbat 24.04', os: 'ubuntu-24.04', cpus: 1, memory: '2 GiB', disk: '10 GiB' },
  { name: 'Rocky Linux 9', os: 'rocky-9', cpus: 2, memory: '2 GiB', disk: '10 GiB' },
  { name: 'Windows Server 2022 (64-bit)', os: 'windows-2022', cpus: 2, memory: '4 GiB', disk: '32 GiB' },
]
const ISOS = [
  { name: 'debian-12.7.0-amd64-netinst.iso', size: '631 MiB' },
  { name: 'SERVER_EVAL_x64FRE_en-us.iso', size: '4.7 GiB' },
]
const TAGS = ['prod', 'staging', 'dev', 'web', 'database', 'batch', 'backup']
const CPUS = [1, 2, 2, 4, 4, 8]
const MEMORY_GIB = [1, 2, 2, 4, 4, 8]

const localSrName = (host: string): string => `Local storage (${host})`
const pad = (n: number, width: number): string => String(n).padStart(width, '0')

type Draw = () => number

/** Host counts per pool: one pool for a small lab, else sizes drawn from POOL_SIZES, the last one taking what is left. */
function poolSizes(hosts: number, next: Draw): number[] {
  if (hosts <= SINGLE_POOL_HOSTS) return [hosts]
  const sizes: number[] = []
  for (let left = hosts; left > 0; ) {
    const size = Math.min(left, POOL_SIZES[next() % POOL_SIZES.length] as number)
    sizes.push(size)
    left -= size
  }
  return sizes
}

interface PoolPlan {
  readonly index: number
  readonly pools: number
  /** global numbers of the pool's first host and VM, so names are unique across pools */
  readonly firstHost: number
  readonly hosts: number
  readonly firstVm: number
  readonly vms: number
  readonly hostWidth: number
  readonly vmWidth: number
}

/**
 * A large lab for load tests, shaped like a real installation: pools of at
 * most 64 hosts (one pool for a small lab), each with NFS and iSCSI shared
 * SRs, an ISO library, a local SR per host and four networks; VMs spread
 * over the pools in proportion to their hosts, round-robin over each pool's
 * hosts, in mixed power states, with 1–3 disks and 1–2 VIFs each. The same
 * options always give the same spec.
 */
export function generateLabSpec({ vms, hosts, seed = DEFAULT_SEED }: GenerateOptions): LabSpec {
  if (!Number.isInteger(vms) || vms < 0) throw new Error(`vms must be a non-negative integer, got ${vms}`)
  if (!Number.isInteger(hosts) || hosts < 1 || hosts > 60_000) throw new Error(`hosts must be an integer in 1..60000, got ${hosts}`)
  const next = new LabRandom(seed).stream('generate')
  const sizes = poolSizes(hosts, next)
  const hostWidth = Math.max(3, String(hosts).length)
  const vmWidth = Math.max(5, String(vms).length)
  let firstHost = 0
  const pools = sizes.map((size, index): PoolSpec => {
    // Rounded cumulative shares, so the pools' VMs add up to exactly `vms`.
    const firstVm = Math.round((firstHost * vms) / hosts)
    const endVm = Math.round(((firstHost + size) * vms) / hosts)
    const plan: PoolPlan = { index, pools: sizes.length, firstHost, hosts: size, firstVm, vms: endVm - firstVm, hostWidth, vmWidth }
    firstHost += size
    return generatePool(plan, next, seed)
  })
  return { pools }
}

function generatePool(plan: PoolPlan, next: Draw, seed: number): PoolSpec {
  const fraction = (): number => next() / 2 ** 32
  const choose = <T>(items: readonly T[]): T => items[next() % items.length] as T
  const label = plan.pools === 1 ? 'Load test pool' : `Load test pool ${pad(plan.index + 1, String(plan.pools).length)}`
  const nfs = plan.pools === 1 ? 'Shared NFS' : `NFS (${label})`
  const iscsi = plan.pools === 1 ? 'Shared iSCSI' : `iSCSI (${label})`

  // Hosts get enough memory for their share of VMs (about 4 GiB each), in powers of two.
  const memoryGiB = Math.max(256, 2 ** Math.ceil(Math.log2(Math.ceil(plan.vms / plan.hosts) * 4)))
  // Each pool manages its hosts in a /24 of its own (172.16.0.0/12 holds 4,096 of them), from .11 on.
  const management = `172.${16 + (plan.index >>> 8)}.${plan.index & 0xff}`
  const hostSpecs: HostSpec[] = Array.from({ length: plan.hosts }, (_, i) => ({
    name: `host-${pad(plan.firstHost + i + 1, plan.hostWidth)}`,
    address: `${management}.${11 + i}`,
    sockets: 2,
    cores: 64,
    memory: `${memoryGiB} GiB`,
  }))

  const sharedTiB = Math.max(4, Math.ceil((plan.vms * 100) / 1024))
  const srs: SrSpec[] = [
    { name: nfs, driver: 'nfs', size: `${sharedTiB} TiB`, location: `nas${pad(plan.index + 1, 2)}.lab.example:/export/xcp-sr` },
    { name: iscsi, driver: 'lvmoiscsi', size: `${sharedTiB} TiB` },
    { name: ISO_SR, driver: 'iso', size: '500 GiB', location: `nas${pad(plan.index + 1, 2)}.lab.example:/export/iso`, isos: ISOS },
    ...hostSpecs.map((host): SrSpec => ({ name: localSrName(host.name), driver: 'ext', size: '2 TiB', host: host.name })),
  ]

  const vmSpecs: VmSpec[] = []
  const messages: MessageSpec[] = []
  for (let i = 0; i < plan.vms; i++) {
    const number = plan.firstVm + i
    const name = `vm-${pad(number + 1, plan.vmWidth)}`
    const roll = fraction()
    const power = roll < 0.6 ? 'Running' : roll < 0.85 ? 'Halted' : roll < 0.93 ? 'Paused' : 'Suspended'
    const host = (hostSpecs[i % plan.hosts] as HostSpec).name
    const shared = fraction() < 0.7 ? nfs : iscsi
    const disks = [{ size: `${10 + (next() % 51)} GiB`, sr: shared }]
    // Data disks: half the VMs have one, some a second; a few sit on the host's local SR.
    for (const chance of [0.5, 0.15]) {
      if (fraction() >= chance) break
      disks.push({ size: `${50 + (next() % 451)} GiB`, sr: fraction() < 0.3 ? localSrName(host) : shared })
    }
    const tagged = fraction() < 0.3
    vmSpecs.push({
      name,
      template: choose(TEMPLATES).name,
      power,
      ...(power === 'Halted' ? {} : { host, uptime: `${1 + (next() % 40)} d` }),
      cpus: choose(CPUS),
      memory: `${choose(MEMORY_GIB)} GiB`,
      disks,
      networks: fraction() < 0.4 ? [VM_NETWORK, BACKEND_NETWORK] : [VM_NETWORK],
      ...(tagged ? { tags: [choose(TAGS)] } : {}),
      created: `${1 + (next() % 700)} d`,
    })
    if (power === 'Running' && number % 500 === 0) {
      const alarm = { metric: 'cpu_usage', value: 0.97, level: 0.9 }
      messages.push({ name: 'ALARM', object: `vm:${name}`, raised: `${1 + (next() % 120)} min`, alarm })
    }
  }

  return {
    name: label,
    description: `Generated: ${plan.vms} VMs on ${plan.hosts} hosts (seed ${seed})`,
    defaultSr: nfs,
    hosts: hostSpecs,
    networks: [
      { name: 'Management', device: 'eth0', subnet: `${management}.0/24`, management: true },
      { name: VM_NETWORK, device: 'eth1', subnet: '10.16.0.0/12' },
      { name: BACKEND_NETWORK, device: 'eth2', subnet: '10.32.0.0/12', mtu: 9000 },
      { name: STORAGE_NETWORK, device: 'eth3', subnet: '10.48.0.0/16', mtu: 9000 },
    ],
    srs,
    templates: TEMPLATES.map((template) => ({ ...template })),
    vms: vmSpecs,
    messages,
  }
}
