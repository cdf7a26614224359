import type { IncomingMessage, ServerResponse } from 'node:http'
import { isKeelError } from '../errors.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import type { StatsGranularity, StatsReader, StatsTree, XapiStats, XoRecord } from '../driver/types.js'
import { granularities } from '../stats/granularity.js'
import { dataSourceOfPath, HOST_RRD_NAMES, VM_RRD_NAMES, type RrdName } from '../stats/rrd-names.js'
import { labObject } from './actions.js'
import type { CallContext, Handler, Services } from './context.js'
import { XapiFailure } from './failures.js'

/** Archives by step, finest first: an `interval` between two is served from the coarser. */
const ARCHIVES = (['seconds', 'minutes', 'hours', 'days'] as const).map((granularity): [number, StatsGranularity] => [granularities[granularity].step, granularity])
const RESIDENT = new Set(['Running', 'Paused'])

interface Column {
  readonly legend: string
  readonly values: ReadonlyArray<number | null>
}

/** Every series of a statistics tree, by its path. */
function* leaves(tree: StatsTree, path: readonly string[] = []): Generator<[string[], ReadonlyArray<number | null>]> {
  for (const [key, value] of Object.entries(tree)) {
    if (Array.isArray(value)) yield [[...path, key], value]
    else yield* leaves(value, [...path, key])
  }
}

/** A statistics tree back in XAPI's data sources and units, one column each. */
function columns(stats: XapiStats, cf: string, type: string, uuid: string, names: readonly RrdName[]): Column[] {
  const found: Column[] = []
  for (const [path, series] of leaves(stats.stats)) {
    const source = dataSourceOfPath(names, path)
    if (source === undefined) continue
    found.push({ legend: `${cf}:${type}:${uuid}:${source.dataSource}`, values: series.map((value) => (value === null ? null : value / source.scale)) })
  }
  return found
}

const refuse = (response: ServerResponse, status: number, reason: string): void => {
  response.writeHead(status, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(reason) })
  response.end(reason)
}

/**
 * XAPI's `GET /rrd_updates?start=&cf=&interval=&host=true` on one host: the
 * RRD rows since `start` of the host (with `host=true`) and of the VMs it
 * runs, as an `xport` document, newest row first. The series are the lab's
 * own (src/stats/series.ts), so a client reading them gets what Keel on the
 * lab serves for the same objects at the same instants.
 */
export class RrdUpdates {
  readonly #services: Services
  readonly #stats: StatsReader

  constructor(services: Services, stats: StatsReader) {
    this.#services = services
    this.#stats = stats
  }

  /** Answers the request if it is `GET /rrd_updates` received by the host `hostRef`; false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse, hostRef: string): boolean {
    const url = new URL(request.url ?? '/', 'http://simulator')
    if (request.method !== 'GET' || url.pathname !== '/rrd_updates') return false
    request.resume()
    this.#answer(url.searchParams, response, hostRef).catch((error: unknown) => {
      if (!response.headersSent) refuse(response, 500, error instanceof Error ? error.message : String(error))
      else response.destroy()
    })
    return true
  }

  async #answer(query: URLSearchParams, response: ServerResponse, hostRef: string): Promise<void> {
    try {
      this.#services.sessions.check(query.get('session_id') ?? '')
    } catch {
      refuse(response, 401, 'SESSION_INVALID')
      return
    }
    const start = Number(query.get('start'))
    if (query.get('start') === null || !Number.isFinite(start)) {
      refuse(response, 400, 'start: a time in seconds is required')
      return
    }
    const cf = query.get('cf') ?? 'AVERAGE'
    const interval = Number(query.get('interval') ?? 0)
    const granularity = ARCHIVES.find(([step]) => step >= interval)?.[1] ?? 'days'
    const host = this.#services.feed.labRecord(hostRef)
    if (host === undefined) {
      refuse(response, 404, `no host ${hostRef}`)
      return
    }
    const hostStats = await this.#stats.hostStats(host, granularity)
    const found = query.get('host') === 'true' ? columns(hostStats, cf, 'host', host.id, HOST_RRD_NAMES) : []
    for (const vm of this.#residents(host)) found.push(...columns(await this.#stats.vmStats(vm, granularity), cf, 'vm', vm.id, VM_RRD_NAMES))
    const { endTimestamp, interval: step } = hostStats
    const count = Math.max(0, ...found.map((column) => column.values.length))
    const rows: string[] = []
    for (let k = count - 1; k >= 0; k--) {
      const time = endTimestamp - (count - 1 - k) * step
      if (time < start) break
      rows.push(`<row><t>${time}</t>${found.map((column) => `<v>${column.values[k] ?? 'NaN'}</v>`).join('')}</row>`)
    }
    const oldest = endTimestamp - Math.max(0, rows.length - 1) * step
    const body =
      '<?xml version="1.0" encoding="UTF-8"?>' +
      `<xport><meta><start>${oldest}</start><step>${step}</step><end>${endTimestamp}</end><rows>${rows.length}</rows><columns>${found.length}</columns>` +
      `<legend>${found.map((column) => `<entry>${column.legend}</entry>`).join('')}</legend></meta><data>${rows.join('')}</data></xport>`
    response.writeHead(200, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(body) })
    response.end(body)
  }

  /** The running and paused VMs the host runs, control domains aside (their RRDs are not read). */
  *#residents(host: XoRecord): Generator<XoRecord> {
    for (const vm of this.#services.driver.objectsOfType('VM')) {
      if (vm['$container'] === host.id && RESIDENT.has(String(vm['power_state']))) yield vm
    }
  }
}

/** A refusal of the lab's statistics as XAPI words it. */
function dataSourceFailure(error: unknown, vm: XoRecord, name: string): unknown {
  if (!isKeelError(error)) return error
  if (error.code === 'INCORRECT_STATE') return new XapiFailure('VM_BAD_POWER_STATE', String(vm['_xapiRef']), 'running', String(vm['power_state']).toLowerCase())
  if (error.code === 'INVALID_PARAMETERS') return new XapiFailure('INVALID_VALUE', 'data_source', name)
  return error
}

/** `VM.record_data_source` and `VM.forget_data_source_archives`: the VM's choice of data sources, kept by the lab's statistics. */
export function dataSourceHandlers(stats: StatsReader): Readonly<Record<string, Handler>> {
  const choose = (recorded: boolean) => async (context: CallContext, [ref, name]: readonly XmlRpcValue[]): Promise<XmlRpcValue> => {
    const vm = labObject(context, 'VM', ref)
    const dataSource = typeof name === 'string' ? name : ''
    await stats.setDataSource(vm, dataSource, recorded).catch((error: unknown) => {
      throw dataSourceFailure(error, vm, dataSource)
    })
    return ''
  }
  return { 'VM.record_data_source': choose(true), 'VM.forget_data_source_archives': choose(false) }
}
