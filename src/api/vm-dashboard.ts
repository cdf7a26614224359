import { Type } from '@sinclair/typebox'
import type { Driver, XoRecord } from '../driver/types.js'
import { NDJSON_TYPE, sendJson, streamChunks } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorResponses } from '../http/schemas.js'
import { messageToAlarm } from '../model/alarm.js'
import { isReplica, vmBackups, type BackupReads } from './backup-insights.js'
import { BASE } from './paths.js'
import type { CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

/** GET /rest/v0/vms/:id/dashboard: the reference's VM overview (VmService.getVmDashboard). */

export interface VmDashboardDeps {
  readonly driver: Pick<Driver, 'objectsOfType'>
  readonly vms: CollectionSource
  /** absent when the driver keeps no disks (no backups) */
  readonly backups?: BackupReads
}

const VmDashboardSchema = Type.Object(
  {
    quickInfo: Type.Record(Type.String(), Type.Unknown(), {
      description: 'id, power_state, uuid, name_description, CPUs.number, mainIpAddress, os_version.name, memory.size, creation, $pool, virtualizationMode, tags, host, pvDrivers*, startTime',
    }),
    alarms: Type.Array(Type.String(), { description: 'ids of the alarms raised on the VM' }),
    backupsInfo: Type.Object({
      lastRuns: Type.Array(Type.Object({ backupJobId: Type.String(), timestamp: Type.Optional(Type.Integer()), status: Type.Optional(Type.String()) })),
      vmProtection: Type.Union([Type.Literal('protected'), Type.Literal('unprotected'), Type.Literal('not-in-active-job')]),
      replication: Type.Union([Type.Object({ id: Type.String(), timestamp: Type.Integer(), sr: Type.Optional(Type.String()) }), Type.Object({})]),
      backupArchives: Type.Array(Type.Object({ id: Type.String(), timestamp: Type.Integer(), backupRepository: Type.String(), size: Type.Number() })),
    }),
  },
  { $id: 'VmDashboard' },
)

const sub = (record: XoRecord, name: string, key: string): unknown => (record[name] as Record<string, unknown> | undefined)?.[key]

function quickInfo(vm: XoRecord) {
  return {
    id: vm.id,
    power_state: vm['power_state'],
    uuid: vm['uuid'],
    name_description: vm['name_description'],
    CPUs: { number: sub(vm, 'CPUs', 'number') },
    mainIpAddress: vm['mainIpAddress'],
    os_version: { name: sub(vm, 'os_version', 'name') },
    memory: { size: sub(vm, 'memory', 'size') },
    creation: { date: sub(vm, 'creation', 'date'), user: sub(vm, 'creation', 'user') },
    $pool: vm['$pool'],
    virtualizationMode: vm['virtualizationMode'],
    tags: vm['tags'],
    // A halted VM's container is its pool: it runs on no host.
    host: vm['$container'] === vm['$pool'] ? undefined : vm['$container'],
    pvDriversDetected: vm['pvDriversDetected'] ?? false,
    pvDriversVersion: vm['pvDriversVersion'],
    pvDriversUpToDate: vm['pvDriversUpToDate'],
    startTime: vm['startTime'] ?? null,
  }
}

/** The newest replica a backup job made of the VM: the snapshots of replicas name the VM they back up. */
function lastReplication(driver: VmDashboardDeps['driver'], vm: XoRecord): { id: string; timestamp: number } | Record<string, never> {
  let newest: { id: string; timestamp: number } | undefined
  for (const candidate of driver.objectsOfType('VM')) {
    const other = candidate['other'] as Record<string, unknown> | undefined
    if (!isReplica(candidate) || other?.['xo:backup:vm'] !== vm.id) continue
    const timestamp = Date.parse(String(other['xo:backup:datetime']))
    if (!Number.isNaN(timestamp) && (newest === undefined || newest.timestamp < timestamp)) newest = { id: candidate.id, timestamp }
  }
  return newest ?? {}
}

export async function vmDashboard(deps: VmDashboardDeps, vm: XoRecord) {
  const alarms: string[] = []
  for (const message of deps.driver.objectsOfType('message')) if (message['$object'] === vm.id && messageToAlarm(message) !== undefined) alarms.push(message.id)
  const backups = deps.backups === undefined ? { lastRuns: [], vmProtection: 'not-in-active-job' as const, backupArchives: [] } : await vmBackups(deps.backups, vm)
  return {
    quickInfo: quickInfo(vm),
    alarms,
    backupsInfo: { lastRuns: backups.lastRuns, vmProtection: backups.vmProtection, replication: lastReplication(deps.driver, vm), backupArchives: backups.backupArchives },
  }
}

export function vmDashboardRoutes(deps: VmDashboardDeps): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/vms/:id/dashboard`,
      operationId: 'get-vm-dashboard',
      summary: 'Overview of a VM: its main figures, alarms, last backup runs, protection and archives',
      tags: ['vms'],
      access: { privilege: { resource: 'vm', action: 'read' } },
      params: Type.Object({ id: Type.String() }),
      query: Type.Object({ ndjson: Type.Optional(Type.Boolean({ description: 'One line per section, each nested under its path, as the reference streams it' })) }),
      responses: { 200: { description: 'The dashboard', schema: VmDashboardSchema }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const dashboard = await vmDashboard(deps, resolveTarget(deps.vms, params.id, principal, 'read'))
        if (query['ndjson'] !== true) return sendJson(res, 200, dashboard)
        const { lastRuns, vmProtection, replication, backupArchives } = dashboard.backupsInfo
        const lines = [
          { quickInfo: dashboard.quickInfo },
          { alarms: dashboard.alarms },
          { backupsInfo: { replication } },
          { backupsInfo: { lastRuns, vmProtection } },
          { backupsInfo: { backupArchives } },
        ]
        await streamChunks(res, 200, NDJSON_TYPE, lines.map((line) => JSON.stringify(line) + '\n'))
      },
    }),
  ]
}
