import { statfs } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { Type } from '@sinclair/typebox'
import { Visibilities } from '../acl/visibility.js'
import type { HostFacts } from '../driver/types.js'
import type { Driver, XoRecord } from '../driver/types.js'
import type { Versions } from '../events/versions.js'
import { NDJSON_TYPE, sendJsonBytes } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorResponses } from '../http/schemas.js'
import type { BackupRepository } from '../model/backups.js'
import { isReplica, siteBackups, type BackupReads } from './backup-insights.js'
import { BASE } from './paths.js'
import { audienceOf, SharedDashboards, type Audience } from './shared-dashboards.js'

/**
 * GET /rest/v0/dashboard: the reference's site-wide summary (XO's
 * XoaService.getDashboard) over everything the caller may read: counts and
 * states of pools, hosts and VMs, storage use, missing updates and backups.
 * Shared by the callers of an audience: the counts and sizes from the
 * driver's records are kept until one of those records changes (at 10,000 VMs
 * they took 260 to 520 ms on a loaded machine, and 50 clients polling got 2
 * answers a second); missing updates and backups, which also follow the hosts'
 * updates, repository folders and the time, are read at most once a second.
 */

export interface SiteDashboardDeps {
  readonly driver: Pick<Driver, 'objectsOfType' | 'getObject'>
  readonly facts: HostFacts
  /** absent when the driver keeps no disks (no backups) */
  readonly backups?: BackupReads & { repositories(): Iterable<BackupRepository> }
  readonly clock: () => number
  /** change counters of the event bus, which carries the driver's and the backups' changes */
  readonly versions: Pick<Versions, 'of'>
}

/** The resources a caller's read privileges are judged on. */
const RESOURCES = ['pool', 'host', 'vm', 'sr', 'backup-job', 'schedule', 'backup-log', 'backup-archive', 'backup-repository']
/** The types of the driver's records the dashboard reads (the VDIs and VBDs tell which SR space replicas hold). */
const INVENTORY_TYPES = ['pool', 'host', 'VM', 'SR', 'VDI', 'VDI-snapshot', 'VDI-unmanaged', 'VBD']
/** With the backups' records. */
const TYPES = [...INVENTORY_TYPES, 'backup', 'schedule', 'backup-log', 'xo-vm-backup', 'backup-repository']

const count = Type.Integer({ minimum: 0 })
const Empty = Type.Object({ isEmpty: Type.Literal(true) })

const SiteDashboardSchema = Type.Object(
  {
    nPools: count,
    nHosts: count,
    hostsStatus: Type.Object({ disabled: count, running: count, halted: count, unknown: count, total: count }),
    resourcesOverview: Type.Union([Type.Object({ nCpus: count, memorySize: count, srSize: count }), Empty]),
    vmsStatus: Type.Object({ active: count, inactive: count, running: count, halted: count, paused: count, suspended: count, unknown: count, total: count }),
    storageRepositories: Type.Union([Type.Object({ size: Type.Object({ available: count, other: count, replicated: count, total: count, used: count }) }), Empty]),
    poolsStatus: Type.Object(
      { connected: count, disconnected: count, unreachable: count, unknown: count, total: count },
      { description: 'the lab\'s pools are always connected' },
    ),
    missingPatches: Type.Object({
      hasAuthorization: Type.Literal(true),
      nHosts: count,
      nHostsEol: Empty,
      nHostsWithMissingPatches: count,
      nHostsFailed: count,
      nPools: count,
      nPoolsWithMissingPatches: count,
    }),
    backupRepositories: Type.Optional(
      Type.Union([Type.Object({ other: Type.Object({ size: Type.Record(Type.String(), Type.Integer()) }) }), Empty], {
        description: 'Keel\'s repositories are folders: `other` sums the archives (`backups`) and, where the file system tells, its `available`, `used`, `other` and `total` bytes',
      }),
    ),
    backups: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Empty], { description: 'jobs by outcome over the last week, the jobs with a failed run among their last three, and how many VMs are protected' })),
  },
  { $id: 'SiteDashboard' },
)

const num = (value: unknown): number => (typeof value === 'number' ? value : 0)

function hostsStatus(hosts: readonly XoRecord[]) {
  const status = { disabled: 0, running: 0, halted: 0, unknown: 0, total: hosts.length }
  for (const host of hosts) {
    if (host['power_state'] === 'Running') {
      if (host['enabled'] === false) status.disabled++
      else status.running++
    } else if (host['power_state'] === 'Halted') status.halted++
    else status.unknown++
  }
  return status
}

function vmsStatus(vms: readonly XoRecord[]) {
  const status = { running: 0, halted: 0, paused: 0, suspended: 0, unknown: 0 }
  for (const vm of vms) {
    const state = vm['power_state']
    if (state === 'Running') status.running++
    else if (state === 'Halted') status.halted++
    else if (state === 'Paused') status.paused++
    else if (state === 'Suspended') status.suspended++
    else status.unknown++
  }
  return { active: status.running + status.paused, inactive: status.halted + status.suspended, ...status, total: vms.length }
}

const isWritable = (sr: XoRecord): boolean => num(sr['size']) > 0 && sr['content_type'] !== 'iso'

function resourcesOverview(pools: readonly XoRecord[], hosts: readonly XoRecord[], srs: readonly XoRecord[]) {
  if (pools.length === 0 && hosts.length === 0 && srs.length === 0) return { isEmpty: true as const }
  const cores = (pool: XoRecord): number => num((pool['cpus'] as Record<string, unknown> | undefined)?.['cores'])
  const memory = (host: XoRecord): number => num((host['memory'] as Record<string, unknown> | undefined)?.['size'])
  return {
    nCpus: pools.reduce((sum, pool) => sum + cores(pool), 0),
    memorySize: hosts.reduce((sum, host) => sum + memory(host), 0),
    srSize: srs.reduce((sum, sr) => sum + num(sr['size']), 0),
  }
}

/** Used space of the writable SRs, the part held by replicas (VMs a backup job made) apart. */
function storageRepositories(driver: SiteDashboardDeps['driver'], srs: readonly XoRecord[]) {
  if (srs.length === 0) return { isEmpty: true as const }
  let replicated = 0
  let total = 0
  let used = 0
  for (const sr of srs) {
    total += num(sr['size'])
    used += num(sr['physical_usage'])
    for (const vdiId of Array.isArray(sr['VDIs']) ? sr['VDIs'] : []) {
      const vdi = driver.getObject(String(vdiId))
      const vbds = Array.isArray(vdi?.['$VBDs']) ? vdi['$VBDs'] : []
      const ofReplica = vbds.some((vbdId) => {
        const vm = driver.getObject(String(driver.getObject(String(vbdId))?.['VM']))
        return vm !== undefined && isReplica(vm)
      })
      if (ofReplica) replicated += num(vdi?.['usage'])
    }
  }
  return { size: { available: total - used, other: used - replicated, replicated, total, used } }
}

async function missingPatches(facts: HostFacts, pools: readonly XoRecord[], hosts: readonly XoRecord[]) {
  let nHostsWithMissingPatches = 0
  let nHostsFailed = 0
  const poolsWith = new Set<unknown>()
  for (const host of hosts) {
    if (host['power_state'] !== 'Running') {
      nHostsFailed++
      continue
    }
    if ((await facts.missingPatches(host)).length === 0) continue
    nHostsWithMissingPatches++
    poolsWith.add(host['$pool'])
  }
  return {
    hasAuthorization: true as const,
    nHosts: hosts.length,
    // Which releases are still supported is the reference's licensed knowledge: not told.
    nHostsEol: { isEmpty: true as const },
    nHostsWithMissingPatches,
    nHostsFailed,
    nPools: pools.length,
    nPoolsWithMissingPatches: poolsWith.size,
  }
}

async function backupRepositories(repositories: readonly BackupRepository[], archiveBytes: (repositoryId: string) => number) {
  const enabled = repositories.filter((repository) => repository.enabled)
  if (enabled.length === 0) return { isEmpty: true as const }
  const size: Record<string, number> = { backups: 0 }
  for (const repository of enabled) {
    const backups = archiveBytes(repository.id)
    size['backups'] = (size['backups'] ?? 0) + backups
    const disk = await statfs(fileURLToPath(repository.url)).catch(() => undefined)
    if (disk === undefined) continue
    const total = disk.blocks * disk.bsize
    const used = total - disk.bfree * disk.bsize
    size['total'] = (size['total'] ?? 0) + total
    size['used'] = (size['used'] ?? 0) + used
    size['available'] = (size['available'] ?? 0) + disk.bavail * disk.bsize
    size['other'] = (size['other'] ?? 0) + used - backups
  }
  return { other: { size } }
}

function* readable<T extends XoRecord>(audience: Audience, resource: string, records: Iterable<T>): Generator<T> {
  const visible = audience.visible(resource)
  for (const record of records) if (visible === undefined || visible(record)) yield record
}

/** The repositories' sizes and the jobs' outcomes, over the backup records the caller may read. */
async function backupSections(backups: NonNullable<SiteDashboardDeps['backups']>, audience: Audience, vms: readonly XoRecord[], now: number) {
  const reads: BackupReads = {
    jobs: () => readable(audience, 'backup-job', backups.jobs()),
    schedules: () => readable(audience, 'schedule', backups.schedules()),
    logs: () => readable(audience, 'backup-log', backups.logs()),
    archives: async () => [...readable(audience, 'backup-archive', await backups.archives())],
  }
  const archives = await reads.archives()
  const archiveBytes = (repositoryId: string): number => archives.reduce((sum, archive) => sum + (archive.backupRepository === repositoryId ? archive.size : 0), 0)
  return {
    backupRepositories: await backupRepositories([...readable(audience, 'backup-repository', backups.repositories())], archiveBytes),
    backups: siteBackups(reads, vms, now),
  }
}

/** The sections that follow the driver's records alone: kept until one of them changes. */
function inventory(driver: SiteDashboardDeps['driver'], audience: Audience) {
  const pools = [...readable(audience, 'pool', driver.objectsOfType('pool'))]
  const hosts = [...readable(audience, 'host', driver.objectsOfType('host'))]
  const vms = [...readable(audience, 'vm', driver.objectsOfType('VM'))]
  const srs = [...readable(audience, 'sr', driver.objectsOfType('SR'))].filter(isWritable)
  return {
    pools,
    hosts,
    sections: {
      nPools: pools.length,
      nHosts: hosts.length,
      hostsStatus: hostsStatus(hosts),
      resourcesOverview: resourcesOverview(pools, hosts, srs),
      vmsStatus: vmsStatus(vms),
      storageRepositories: storageRepositories(driver, srs),
      poolsStatus: { connected: pools.length, disconnected: 0, unreachable: 0, unknown: 0, total: pools.length },
    },
  }
}

type Inventory = ReturnType<typeof inventory>

/** The inventory's sections, then those that also follow the hosts' updates, the backups and the time. */
async function siteDashboard(deps: SiteDashboardDeps, audience: Audience, known: Inventory) {
  const sections = { ...known.sections, missingPatches: await missingPatches(deps.facts, known.pools, known.hosts) }
  if (deps.backups === undefined) return sections
  const vms = [...readable(audience, 'vm', deps.driver.objectsOfType('VM'))]
  return { ...sections, ...(await backupSections(deps.backups, audience, vms, deps.clock())) }
}

interface Bodies {
  readonly json: Buffer
  /** one line per section, `{"<section>": value}` */
  readonly ndjson: Buffer
}

async function bodies(deps: SiteDashboardDeps, audience: Audience, known: Inventory): Promise<Bodies> {
  const dashboard = await siteDashboard(deps, audience, known)
  return {
    json: Buffer.from(JSON.stringify(dashboard)),
    ndjson: Buffer.from(Object.entries(dashboard).map(([section, value]) => JSON.stringify({ [section]: value }) + '\n').join('')),
  }
}

export function siteDashboardRoutes(deps: SiteDashboardDeps): RouteDef[] {
  const visibilities = new Visibilities()
  const inventories = new SharedDashboards<Inventory>(
    () => deps.versions.of(INVENTORY_TYPES),
    async (audience) => inventory(deps.driver, audience),
  )
  const shared = new SharedDashboards<Bodies>(
    () => `${deps.versions.of(TYPES)}@${Math.floor(deps.clock() / 1000)}`,
    async (audience) => bodies(deps, audience, await inventories.of(audience)),
  )
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/dashboard`,
      operationId: 'get-site-dashboard',
      summary: 'Site-wide summary over what the caller may read: pools, hosts and VMs by state, storage use, missing updates, backups',
      tags: ['dashboard'],
      access: { authenticated: true },
      query: Type.Object({ ndjson: Type.Optional(Type.Boolean({ description: 'One line per section, `{"<section>": value}`' })) }),
      responses: { 200: { description: 'The dashboard', schema: SiteDashboardSchema }, ...ErrorResponses },
      handler: async ({ res, query, principal }) => {
        const dashboard = await shared.of(audienceOf(principal, RESOURCES, visibilities))
        if (query['ndjson'] === true) sendJsonBytes(res, 200, dashboard.ndjson, NDJSON_TYPE)
        else sendJsonBytes(res, 200, dashboard.json)
      },
    }),
  ]
}
