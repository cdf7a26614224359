import { DEFAULT_SEED } from './expand-context.js'
import { LabRandom } from './random.js'
import type { HostSpec, LabSpec, MessageSpec, SrSpec, TemplateSpec, VmSpec } from './spec.js'

export interface GenerateOptions {
  readonly vms: number
  readonly hosts: number
  readonly seed?: number
}

const POOL = 'Load test pool'
const SHARED_SR = 'Shared NFS'
const VM_NETWORK = 'VM network'
const BACKEND_NETWORK = 'Backend network'

const TEMPLATES: readonly TemplateSpec[] = [
  { name: 'Debian Bookworm 12', os: 'debian-12', cpus: 1, memory: '2 GiB', disk: '10 GiB' },
  { name: 'Ubuntu Noble Numbat 24.04', os: 'ubuntu-24.04', cpus: 1, memory: '2 GiB', disk: '10 GiB' },
  { name: 'Rocky Linux 9', os: 'rocky-9', cpus: 2, memory: '2 GiB', disk: '10 GiB' },
  { name: 'Windows Server 2022 (64-bit)', os: 'windows-2022', cpus: 2, memory: '4 GiB', disk: '32 GiB' },
]
const TAGS = ['prod', 'staging', 'dev', 'web', 'database', 'batch', 'backup']
const CPUS = [1, 2, 2, 4, 4, 8]
const MEMORY_GIB = [1, 2, 2, 4, 4, 8]

const localSrName = (host: string): string => `Local storage (${host})`
const pad = (n: number, width: number): string => String(n).padStart(width, '0')

/**
 * A large lab for load tests: one pool, VMs spread round-robin over the
 * hosts in mixed power states, 1–2 disks and 1–2 VIFs each. The same options
 * always give the same spec.
 */
export function generateLabSpec({ vms, hosts, seed = DEFAULT_SEED }: GenerateOptions): LabSpec {
  if (!Number.isInteger(vms) || vms < 0) throw new Error(`vms must be a non-negative integer, got ${vms}`)
  if (!Number.isInteger(hosts) || hosts < 1 || hosts > 60_000) throw new Error(`hosts must be an integer in 1..60000, got ${hosts}`)
  const next = new LabRandom(seed).stream('generate')
  const fraction = (): number => next() / 2 ** 32
  const choose = <T>(items: readonly T[]): T => items[next() % items.length] as T

  // Hosts get enough memory for their share of VMs (about 4 GiB each), in powers of two.
  const memoryGiB = Math.max(256, 2 ** Math.ceil(Math.log2(Math.ceil(vms / hosts) * 4)))
  const hostSpecs: HostSpec[] = Array.from({ length: hosts }, (_, i) => {
    // 10.0.0.11 onwards, in the management network
    const address = 11 + i
    return {
      name: `host-${pad(i + 1, Math.max(3, String(hosts).length))}`,
      address: `10.0.${address >>> 8}.${address & 0xff}`,
      sockets: 2,
      cores: 64,
      memory: `${memoryGiB} GiB`,
    }
  })

  const srs: SrSpec[] = [
    { name: SHARED_SR, driver: 'nfs', size: `${Math.max(4, Math.ceil((vms * 150) / 1024))} TiB` },
    ...hostSpecs.map((host): SrSpec => ({ name: localSrName(host.name), driver: 'ext', size: '2 TiB', host: host.name })),
  ]

  const width = Math.max(5, String(vms).length)
  const vmSpecs: VmSpec[] = []
  const messages: MessageSpec[] = []
  for (let i = 0; i < vms; i++) {
    const name = `vm-${pad(i + 1, width)}`
    const roll = fraction()
    const power = roll < 0.6 ? 'Running' : roll < 0.85 ? 'Halted' : roll < 0.93 ? 'Paused' : 'Suspended'
    const host = (hostSpecs[i % hosts] as HostSpec).name
    const disks = [{ size: `${10 + (next() % 51)} GiB`, sr: SHARED_SR }]
    if (fraction() < 0.5) {
      disks.push({ size: `${50 + (next() % 451)} GiB`, sr: fraction() < 0.3 ? localSrName(host) : SHARED_SR })
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
    if (power === 'Running' && i % 500 === 0) {
      const alarm = { metric: 'cpu_usage', value: 0.97, level: 0.9 }
      messages.push({ name: 'ALARM', object: `vm:${name}`, raised: `${1 + (next() % 120)} min`, alarm })
    }
  }

  return {
    pools: [
      {
        name: POOL,
        description: `Generated: ${vms} VMs on ${hosts} hosts (seed ${seed})`,
        defaultSr: SHARED_SR,
        hosts: hostSpecs,
        networks: [
          { name: 'Management', device: 'eth0', subnet: '10.0.0.0/16', management: true },
          { name: VM_NETWORK, device: 'eth1', subnet: '10.16.0.0/12' },
          { name: BACKEND_NETWORK, device: 'eth2', subnet: '10.32.0.0/12', mtu: 9000 },
        ],
        srs,
        templates: TEMPLATES.map((template) => ({ ...template })),
        vms: vmSpecs,
        messages,
      },
    ],
  }
}
