import type { IncomingMessage } from 'node:http'
import { KeelError, noSuchObject } from '../../errors.js'
import { granularities } from '../../stats/granularity.js'
import { requireResident, requireRunningForDataSources, requireRunningHost } from '../../stats/reader.js'
import { HOST_RRD_NAMES, VM_RRD_NAMES, type RrdName } from '../../stats/rrd-names.js'
import type { StatsGranularity, StatsReader, XapiStats, XoRecord } from '../types.js'
import { keelErrorOf, translated } from './errors.js'
import { statsOfRrdUpdates } from './rrd-updates.js'
import { XapiError, type XapiLocation, type XapiLocator } from './types.js'

async function text(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of response) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Statistics read from the hosts' RRDs, as xo-server reads them: each host
 * serves its own and its VMs' over `/rrd_updates` (a VM's are asked of the
 * host it runs on), every archived point of the granularity's window. The
 * data sources a VM records are chosen on XAPI (`VM.record_data_source`).
 */
export class XapiRrdStats implements StatsReader {
  readonly #locator: XapiLocator
  readonly #getObject: (id: string) => XoRecord | undefined
  readonly #clock: () => number

  constructor(locator: XapiLocator, getObject: (id: string) => XoRecord | undefined, clock: () => number = Date.now) {
    this.#locator = locator
    this.#getObject = getObject
    this.#clock = clock
  }

  async hostStats(host: XoRecord, granularity: StatsGranularity): Promise<XapiStats> {
    requireRunningHost(host)
    return this.#read(host, host, 'host', HOST_RRD_NAMES, granularity)
  }

  async vmStats(vm: XoRecord, granularity: StatsGranularity): Promise<XapiStats> {
    requireResident(vm)
    // A running VM's container is the host it runs on.
    const host = this.#getObject(String(vm['$container']))
    if (host?.type !== 'host') {
      throw new KeelError('INVALID_PARAMETERS', `VM ${vm.id} is halted or host could not be found`, { errors: [{ path: 'id', message: 'the VM runs on no known host' }] })
    }
    return this.#read(vm, host, 'vm', VM_RRD_NAMES, granularity)
  }

  async setDataSource(vm: XoRecord, dataSource: string, recorded: boolean): Promise<void> {
    requireRunningForDataSources(vm)
    const { pool, ref } = this.#locate(vm)
    try {
      await pool.call(recorded ? 'VM.record_data_source' : 'VM.forget_data_source_archives', [ref, dataSource])
    } catch (error) {
      // The host names the data source it does not know; the answer is the lab's.
      if (error instanceof XapiError && error.code === 'INVALID_VALUE') {
        throw new KeelError('INVALID_PARAMETERS', `VM ${vm.id} has no data source ${dataSource}`, { errors: [{ path: 'data_source', message: 'is not a data source of this VM' }] })
      }
      throw keelErrorOf(error, { object: vm })
    }
  }

  async #read(record: XoRecord, host: XoRecord, type: 'host' | 'vm', names: readonly RrdName[], granularity: StatsGranularity): Promise<XapiStats> {
    const { step, points } = granularities[granularity]
    const { pool } = this.#locate(host)
    const start = Math.floor(this.#clock() / 1000) - step * points
    return translated({ object: record }, async () => {
      const response = await pool.request({
        method: 'GET',
        path: '/rrd_updates',
        query: { start: String(start), cf: 'AVERAGE', interval: String(step), host: String(type === 'host') },
        host: String(host['address'] ?? ''),
      })
      return statsOfRrdUpdates(await text(response), type, record.id, names)
    })
  }

  #locate(record: XoRecord): XapiLocation {
    const location = this.#locator.locate(record)
    if (location === undefined) throw noSuchObject(record.id, record.type)
    return location
  }
}

/** A host's CPU use, 0 to 1: the mean over its CPUs of the last point each has (XAPI gives percents); 0 without any. */
export function lastCpuUse({ stats }: XapiStats): number {
  const cpus = stats['cpus']
  const last = cpus === undefined || Array.isArray(cpus) ? [] : Object.values(cpus).flatMap((series) => (Array.isArray(series) ? series.filter((value): value is number => value !== null).slice(-1) : []))
  return last.length === 0 ? 0 : last.reduce((sum, value) => sum + value, 0) / last.length / 100
}
