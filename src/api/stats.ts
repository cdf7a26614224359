import { Type } from '@sinclair/typebox'
import type { Driver, StatsGranularity, StatsReader, XoRecord } from '../driver/types.js'
import { isKeelError } from '../errors.js'
import { JSON_TYPE, sendJsonBytes, sendNoContent, streamChunks } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, ErrorResponses } from '../http/schemas.js'
import { BASE } from './paths.js'
import type { CollectionSource } from './sources.js'
import { objectPieces, statsBody } from './stats-bodies.js'
import { resolveTarget } from './target.js'

export interface StatsDeps {
  readonly reader: StatsReader
  readonly driver: Pick<Driver, 'objectsOfType'>
  readonly vms: CollectionSource
  readonly hosts: CollectionSource
  readonly pools: CollectionSource
}

const StatsQuery = Type.Object({
  granularity: Type.Optional(
    Type.Union([Type.Literal('seconds'), Type.Literal('minutes'), Type.Literal('hours'), Type.Literal('days')], {
      description: 'One point every 5 seconds over 10 minutes, every minute over 2 hours, every hour over a week, or every day over a year',
      default: 'seconds',
    }),
  ),
})

const StatsSchema = Type.Object(
  {
    endTimestamp: Type.Integer({ description: 'the last point\'s time, in seconds' }),
    interval: Type.Integer({ description: 'seconds between points' }),
    stats: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'one array per metric, oldest point first, null where nothing was recorded (xo-server\'s names and units: `cpus` by core in percent, `memory` and `memoryFree` in bytes, `pifs`/`vifs` `rx`/`tx` and `xvds` `r`/`w` in bytes/s, `iops`, `latency` in ms, `load`, ...)',
    }),
  },
  { $id: 'XapiStats' },
)

const ErrorOnly = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) })

const granularityOf = (query: { granularity?: StatsGranularity }): StatsGranularity => query.granularity ?? 'seconds'

/**
 * A pool's hosts' statistics by host id, each host's body as its own route
 * serializes it; a host that cannot answer gets its error in its place, as
 * xo-server does.
 */
async function poolStats(deps: StatsDeps, pool: XoRecord, granularity: StatsGranularity): Promise<Array<[string, Buffer]>> {
  const byHost: Array<[string, Buffer]> = []
  for (const host of deps.driver.objectsOfType('host')) {
    if (host['$pool'] !== pool.id) continue
    try {
      byHost.push([host.id, statsBody(await deps.reader.hostStats(host, granularity))])
    } catch (error) {
      if (!isKeelError(error)) throw error
      byHost.push([host.id, Buffer.from(JSON.stringify({ error: { code: error.code, message: error.message } }))])
    }
  }
  return byHost
}

export function statsRoutes(deps: StatsDeps): RouteDef[] {
  const { reader } = deps
  const id = Type.Object({ id: Type.String() })
  const dataSourceParams = Type.Object({ id: Type.String(), data_source: Type.String({ description: 'XAPI\'s name of the data source, e.g. `cpu0`, `vbd_xvda_read`, `runstate_fullrun`' }) })
  const dataSourceRoute = (method: 'PUT' | 'DELETE', recorded: boolean) =>
    defineRoute({
      method,
      path: `${BASE}/vms/:id/stats/data_source/:data_source`,
      operationId: recorded ? 'record-vm-data-source' : 'forget-vm-data-source',
      summary: recorded ? 'Start recording one data source of a running VM' : 'Stop recording one data source of a running VM and forget its archives',
      tags: ['vms'],
      access: { privilege: { resource: 'vm', action: 'update:datasources' } },
      params: dataSourceParams,
      responses: { 204: { description: 'Done' }, ...BodyErrorResponses },
      handler: async ({ res, params, principal }) => {
        const vm = resolveTarget(deps.vms, params.id, principal, 'update:datasources')
        await reader.setDataSource(vm, params.data_source, recorded)
        sendNoContent(res)
      },
    })
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/vms/:id/stats`,
      operationId: 'get-vm-stats',
      summary: 'A running VM\'s statistics (422 when it is halted)',
      tags: ['vms'],
      access: { privilege: { resource: 'vm', action: 'read' } },
      params: id,
      query: StatsQuery,
      responses: { 200: { description: 'The VM\'s series', schema: StatsSchema }, ...BodyErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const vm = resolveTarget(deps.vms, params.id, principal, 'read')
        sendJsonBytes(res, 200, statsBody(await reader.vmStats(vm, granularityOf(query))))
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/hosts/:id/stats`,
      operationId: 'get-host-stats',
      summary: 'A running host\'s statistics',
      tags: ['hosts'],
      access: { privilege: { resource: 'host', action: 'read' } },
      params: id,
      query: StatsQuery,
      responses: { 200: { description: 'The host\'s series', schema: StatsSchema }, ...BodyErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const host = resolveTarget(deps.hosts, params.id, principal, 'read')
        sendJsonBytes(res, 200, statsBody(await reader.hostStats(host, granularityOf(query))))
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/pools/:id/stats`,
      operationId: 'get-pool-stats',
      summary: 'The statistics of each host of a pool, by host id',
      tags: ['pools'],
      access: { privilege: { resource: 'pool', action: 'read' } },
      params: id,
      query: StatsQuery,
      responses: {
        200: { description: 'Each host\'s series, or the error it answered', schema: Type.Record(Type.String(), Type.Union([StatsSchema, ErrorOnly])) },
        ...ErrorResponses,
      },
      handler: async ({ res, params, query, principal }) => {
        const pool = resolveTarget(deps.pools, params.id, principal, 'read')
        // Megabytes at a few thousand VMs: written as the hosts' bodies come, never joined into one.
        await streamChunks(res, 200, JSON_TYPE, objectPieces(await poolStats(deps, pool, granularityOf(query))))
      },
    }),
    dataSourceRoute('PUT', true),
    dataSourceRoute('DELETE', false),
  ]
}
