import { Type } from '@sinclair/typebox'
import type { Driver, XoRecord } from '../driver/types.js'
import { noSuchObject } from '../errors.js'
import { NDJSON_TYPE, sendJson, streamChunks } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorResponses } from '../http/schemas.js'
import { BASE } from './paths.js'
import { requirePrivilege } from '../acl/check.js'
import type { PoolMembers, PoolMembersIndex, VmStatus } from './pool-members.js'

/**
 * GET /rest/v0/pools/:id/dashboard: the reference product's aggregated pool
 * view (XO PoolService.getDashboard), computed from the pool's members as
 * PoolMembersIndex keeps them and live usage figures. Host and SR figures come
 * from the records, counts from the index, CPU and guest memory from the
 * driver's `usage` (the lab simulates them; a real driver reads the
 * hypervisor's statistics), for the pool's running and paused VMs only.
 */

export interface DashboardDeps {
  readonly driver: Driver
  readonly members: PoolMembersIndex
  readonly clock: () => number
}

const TOP = 5

const count = Type.Integer({ minimum: 0 })
const percent = Type.Number({ description: '0 to 100' })
const named = { id: Type.String(), name_label: Type.String() }

const DashboardSchema = Type.Object(
  {
    hosts: Type.Object({
      status: Type.Object(
        { running: count, disabled: count, halted: count, total: count },
        { description: '`running` hosts are enabled; `disabled` ones run but accept no new VMs; `total` also counts hosts in an unknown state' },
      ),
      topFiveUsage: Type.Object({
        ram: Type.Array(Type.Object({ ...named, size: Type.Integer(), usage: Type.Integer(), percent })),
        cpu: Type.Array(Type.Object({ ...named, percent })),
      }),
      missingPatches: Type.Object(
        { hasAuthorization: Type.Boolean() },
        { description: 'always `{hasAuthorization: false}`: Keel does not track host patches yet' },
      ),
    }),
    vms: Type.Object({
      status: Type.Object({ running: count, halted: count, paused: count, suspended: count, total: count }),
      topFiveUsage: Type.Object({
        cpu: Type.Array(Type.Object({ ...named, percent })),
        ram: Type.Array(
          Type.Object({ ...named, memory: Type.Integer(), memoryFree: Type.Integer(), percent }, { description: 'VMs whose guest agent reports memory' }),
        ),
      }),
    }),
    srs: Type.Object({
      topFiveUsage: Type.Array(Type.Object({ ...named, percent, physical_usage: Type.Integer(), size: Type.Integer() }), {
        description: 'writable SRs (ISO libraries excluded) by physical use',
      }),
    }),
    alarms: Type.Array(Type.String(), { description: 'ids of the alarms raised on objects of the pool (GET /rest/v0/alarms/<id>)' }),
    cpuProvisioning: Type.Object(
      { total: count, assigned: count, percent },
      { description: 'vCPUs of the running VMs (`assigned`) against the physical cores of the pool (`total`)' },
    ),
  },
  { $id: 'PoolDashboard' },
)

interface Ranked {
  readonly percent: number
}

/** The `TOP` highest by percent; NaN (an object of size 0) sorts last, as in the reference. */
function topFive<T extends Ranked>(items: T[]): T[] {
  const key = (item: T): number => (Number.isNaN(item.percent) ? -Infinity : item.percent)
  return items.sort((a, b) => key(b) - key(a)).slice(0, TOP)
}

const num = (value: unknown): number => (typeof value === 'number' ? value : 0)
const str = (value: unknown): string => (typeof value === 'string' ? value : '')
const field = (record: XoRecord, name: string, sub: string): unknown => (record[name] as Record<string, unknown> | undefined)?.[sub]

function hostSection(hosts: Iterable<XoRecord>, count: number, figuresOf: Pick<Driver, 'usage'>, now: number) {
  const status = { running: 0, disabled: 0, halted: 0, total: count }
  const ram = []
  const cpu = []
  for (const host of hosts) {
    const state = host['power_state']
    if (state === 'Halted') status.halted++
    if (state !== 'Running') continue
    if (host['enabled'] === false) status.disabled++
    else status.running++
    const figures = figuresOf.usage(host, now)
    const size = num(field(host, 'memory', 'size'))
    const used = figures.memory ?? num(field(host, 'memory', 'usage'))
    const id = host.id
    const name_label = str(host['name_label'])
    ram.push({ id, name_label, size, usage: used, percent: (used / size) * 100 })
    cpu.push({ id, name_label, percent: figures.cpu * 100 })
  }
  return { status, topFiveUsage: { ram: topFive(ram), cpu: topFive(cpu) }, missingPatches: { hasAuthorization: false } }
}

function vmSection(vms: Iterable<XoRecord>, counts: Readonly<VmStatus>, figuresOf: Pick<Driver, 'usage'>, now: number) {
  const cpu = []
  const ram = []
  for (const vm of vms) {
    const state = vm['power_state']
    if (state !== 'Running' && state !== 'Paused') continue
    const figures = figuresOf.usage(vm, now)
    const id = vm.id
    const name_label = str(vm['name_label'])
    cpu.push({ id, name_label, percent: figures.cpu * 100 })
    // Only a guest agent can tell how much of its memory a VM uses.
    if (vm['managementAgentDetected'] === true && figures.memory !== undefined) {
      const memory = num(field(vm, 'memory', 'size'))
      ram.push({ id, name_label, memory, memoryFree: Math.max(0, memory - figures.memory), percent: (figures.memory / memory) * 100 })
    }
  }
  return { status: { ...counts }, topFiveUsage: { cpu: topFive(cpu), ram: topFive(ram) } }
}

function srSection(srs: Iterable<XoRecord>) {
  const writable = [...srs].filter((sr) => sr['content_type'] !== 'iso' && sr['SR_type'] !== 'udev' && num(sr['size']) > 0)
  return {
    topFiveUsage: topFive(
      writable.map((sr) => {
        const size = num(sr['size'])
        const physical_usage = num(sr['physical_usage'])
        return { id: sr.id, name_label: str(sr['name_label']), percent: (physical_usage / size) * 100, physical_usage, size }
      }),
    ),
  }
}

function cpuProvisioning(pool: XoRecord, assigned: number) {
  const total = num(field(pool, 'cpus', 'cores'))
  return { total, assigned, percent: total === 0 ? 0 : (assigned * 100) / total }
}

/**
 * Usage figures are read at whole seconds, so that a dashboard polled by many
 * clients is computed once a second at most (XAPI's own statistics have
 * 5-second steps).
 */
const USAGE_STEP = 1000

/** The dashboard of `pool` at `time` (its usage figures at the second before), from its members. */
export function poolDashboard(members: PoolMembers, pool: XoRecord, figuresOf: Pick<Driver, 'usage'>, time: number) {
  const now = time - (time % USAGE_STEP)
  return {
    hosts: hostSection(members.hosts.values(), members.hosts.size, figuresOf, now),
    vms: vmSection(members.vms.values(), members.vmStatus, figuresOf, now),
    srs: srSection(members.srs.values()),
    alarms: [...members.alarms],
    cpuProvisioning: cpuProvisioning(pool, members.assignedCpus),
  }
}

type Dashboard = ReturnType<typeof poolDashboard>

/** The reference's NDJSON form: one line per section, each nested under its path (`{"hosts":{"status":…}}`). */
function* ndjsonSections(dashboard: Dashboard): Generator<string> {
  const sections: Array<[string[], unknown]> = [
    [['hosts', 'status'], dashboard.hosts.status],
    [['vms', 'status'], dashboard.vms.status],
    [['alarms'], dashboard.alarms],
    [['hosts', 'missingPatches'], dashboard.hosts.missingPatches],
    [['srs', 'topFiveUsage'], dashboard.srs.topFiveUsage],
    [['hosts', 'topFiveUsage', 'ram'], dashboard.hosts.topFiveUsage.ram],
    [['hosts', 'topFiveUsage', 'cpu'], dashboard.hosts.topFiveUsage.cpu],
    [['cpuProvisioning'], dashboard.cpuProvisioning],
    [['vms', 'topFiveUsage'], dashboard.vms.topFiveUsage],
  ]
  for (const [path, value] of sections) {
    yield JSON.stringify(path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value)) + '\n'
  }
}

interface Computed {
  readonly version: number
  readonly pool: XoRecord
  readonly step: number
  readonly dashboard: Dashboard
}

export function dashboardRoutes(deps: DashboardDeps): RouteDef[] {
  // The last dashboard of each pool, while its members, its record and the second stay the same.
  const computed = new Map<string, Computed>()
  const dashboardOf = async (pool: XoRecord): Promise<Dashboard> => {
    const members = deps.members.of(pool.id)
    const last = computed.get(pool.id)
    if (last !== undefined && last.version === members.version && last.pool === pool && last.step === Math.floor(deps.clock() / USAGE_STEP)) return last.dashboard
    // Figures the driver reads from the pool (the XAPI driver: the hosts' RRDs) are read before the sums.
    await deps.driver.readUsage?.(members.hosts.values())
    const now = deps.clock()
    const step = Math.floor(now / USAGE_STEP)
    const dashboard = poolDashboard(members, pool, deps.driver, now)
    computed.set(pool.id, { version: members.version, pool, step, dashboard })
    return dashboard
  }
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/pools/:id/dashboard`,
      operationId: 'get-pool-dashboard',
      summary: 'Aggregated view of a pool: host and VM status, top resource users, SR use, alarms, CPU provisioning',
      tags: ['pools'],
      access: { privilege: { resource: 'pool', action: 'read' } },
      params: Type.Object({ id: Type.String() }),
      query: Type.Object({
        ndjson: Type.Optional(Type.Boolean({ description: 'One line per section, each nested under its path' })),
      }),
      responses: { 200: { description: 'The dashboard', schema: DashboardSchema }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const id = params.id
        const pool = deps.driver.getObject(id)
        if (pool === undefined || pool.type !== 'pool') {
          computed.delete(id)
          throw noSuchObject(id, 'pool')
        }
        requirePrivilege(principal, 'pool', 'read', pool, id)
        const dashboard = await dashboardOf(pool)
        if (query['ndjson'] === true) await streamChunks(res, 200, NDJSON_TYPE, ndjsonSections(dashboard))
        else sendJson(res, 200, dashboard)
      },
    }),
  ]
}
