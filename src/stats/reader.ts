import { LRUCache } from 'lru-cache'
import type { Driver, StatsGranularity, StatsReader, XapiStats, XoRecord } from '../driver/types.js'
import { KeelError } from '../errors.js'
import type { Db } from '../store/database.js'
import { migrateComponent } from '../store/component-migrations.js'
import { vmDataSources, type VmDevices } from './data-sources.js'
import { advanced, newPoints } from './advance.js'
import { windowAt, type StatsWindow } from './granularity.js'
import { hostSeries, vmSeries, type HostShape, type VmShape } from './series.js'

const MIGRATIONS = [
  `CREATE TABLE stats_data_sources (
    vm_id TEXT NOT NULL,
    name TEXT NOT NULL,
    recorded INTEGER NOT NULL,
    PRIMARY KEY (vm_id, name)
  )`,
]

const num = (value: unknown): number => (typeof value === 'number' ? value : 0)
const field = (record: XoRecord | undefined, name: string): unknown => record?.[name]
const sub = (record: XoRecord, name: string, key: string): unknown => (record[name] as Record<string, unknown> | undefined)?.[key]
const ids = (value: unknown): string[] => (Array.isArray(value) ? value.filter((id): id is string => typeof id === 'string') : [])
const startOf = (record: XoRecord): number | undefined => (typeof record['startTime'] === 'number' ? record['startTime'] : undefined)

const RUNNING_VM = new Set(['Running', 'Paused'])

/** A VM must be on a host for its statistics to exist. */
export function requireResident(vm: XoRecord): void {
  if (!RUNNING_VM.has(String(vm['power_state']))) {
    throw new KeelError('INVALID_PARAMETERS', `VM ${vm.id} is halted or host could not be found`, {
      errors: [{ path: 'id', message: `the VM is ${String(vm['power_state'])}` }],
    })
  }
}

/** Only a running host keeps statistics. */
export function requireRunningHost(host: XoRecord): void {
  if (host['power_state'] !== 'Running') {
    throw new KeelError('INCORRECT_STATE', `host ${host.id} is not running`, { actual: host['power_state'], expected: 'Running' })
  }
}

/** A VM's data sources are chosen while it runs. */
export function requireRunningForDataSources(vm: XoRecord): void {
  if (!RUNNING_VM.has(String(vm['power_state']))) {
    throw new KeelError('INCORRECT_STATE', `VM ${vm.id} must be running to change its data sources`, { actual: vm['power_state'], expected: 'Running' })
  }
}

interface Cached {
  readonly record: XoRecord
  readonly version: number
  readonly window: StatsWindow
  readonly stats: XapiStats
}

/**
 * The lab's statistics: series made from `driver.usage` at each point
 * (src/stats/series.ts), kept per object and granularity until the window
 * moves on or the record changes. A window that moved on keeps the points it
 * had and computes only the new ones: a host's whole series took 18 ms (a
 * 32-host pool's stats stalled every request for half a second each five
 * seconds). The data sources chosen are kept
 * in the store, so that a restart records what it recorded before.
 */
export class UsageStats implements StatsReader {
  readonly #driver: Pick<Driver, 'getObject' | 'usage'>
  readonly #clock: () => number
  readonly #chosen = new Map<string, Map<string, boolean>>()
  readonly #versions = new Map<string, number>()
  readonly #cache = new LRUCache<string, Cached>({ max: 20_000 })
  readonly #save: (vmId: string, name: string, recorded: number) => void

  constructor(driver: Pick<Driver, 'getObject' | 'usage'>, db: Db, clock: () => number) {
    this.#driver = driver
    this.#clock = clock
    migrateComponent(db, 'stats', MIGRATIONS)
    const rows = db.prepare('SELECT vm_id, name, recorded FROM stats_data_sources').all() as Array<{ vm_id: string; name: string; recorded: number }>
    for (const row of rows) this.#chosenOf(row.vm_id).set(row.name, row.recorded === 1)
    const upsert = db.prepare(
      'INSERT INTO stats_data_sources (vm_id, name, recorded) VALUES (?, ?, ?) ON CONFLICT (vm_id, name) DO UPDATE SET recorded = excluded.recorded',
    )
    this.#save = (vmId, name, recorded) => upsert.run(vmId, name, recorded)
  }

  async hostStats(host: XoRecord, granularity: StatsGranularity): Promise<XapiStats> {
    requireRunningHost(host)
    return this.#cached(host, granularity, (window) => hostSeries(this.#hostShape(host), window, (ms) => this.#driver.usage(host, ms)))
  }

  async vmStats(vm: XoRecord, granularity: StatsGranularity): Promise<XapiStats> {
    requireResident(vm)
    return this.#cached(vm, granularity, (window) => vmSeries(this.#vmShape(vm), window, (ms) => this.#driver.usage(vm, ms)))
  }

  async setDataSource(vm: XoRecord, dataSource: string, recorded: boolean): Promise<void> {
    requireRunningForDataSources(vm)
    if (!vmDataSources(this.#devices(vm)).has(dataSource)) {
      throw new KeelError('INVALID_PARAMETERS', `VM ${vm.id} has no data source ${dataSource}`, {
        errors: [{ path: 'data_source', message: `is not a data source of this VM` }],
      })
    }
    this.#save(vm.id, dataSource, recorded ? 1 : 0)
    this.#chosenOf(vm.id).set(dataSource, recorded)
    this.#versions.set(vm.id, (this.#versions.get(vm.id) ?? 0) + 1)
  }

  #chosenOf(vmId: string): Map<string, boolean> {
    let chosen = this.#chosen.get(vmId)
    if (chosen === undefined) this.#chosen.set(vmId, (chosen = new Map()))
    return chosen
  }

  #cached(record: XoRecord, granularity: StatsGranularity, make: (window: StatsWindow) => XapiStats): XapiStats {
    const window = windowAt(granularity, this.#clock())
    const key = `${record.id}\0${granularity}`
    const version = this.#versions.get(record.id) ?? 0
    const cached = this.#cache.get(key)
    const current = cached !== undefined && cached.record === record && cached.version === version ? cached : undefined
    if (current?.window.endTimestamp === window.endTimestamp) return current.stats
    const steps = current === undefined ? 0 : (window.endTimestamp - current.window.endTimestamp) / window.interval
    const stats =
      (current !== undefined && steps > 0 && steps < window.times.length ? advanced(current.stats, make(newPoints(window, steps)), steps, window) : undefined) ??
      make(window)
    this.#cache.set(key, { record, version, window, stats })
    return stats
  }

  #hostShape(host: XoRecord): HostShape {
    const pifs: string[] = []
    for (const id of ids(host['$PIFs'])) {
      const pif = this.#driver.getObject(id)
      const match = /^eth(\d+)$/.exec(String(field(pif, 'device')))
      if (match?.[1] !== undefined && field(pif, 'physical') === true) pifs.push(match[1])
    }
    const srs = new Set<string>()
    for (const id of ids(host['$PBDs'])) {
      const pbd = this.#driver.getObject(id)
      const sr = this.#driver.getObject(String(field(pbd, 'SR')))
      if (field(pbd, 'attached') === true && sr !== undefined && sr['content_type'] !== 'iso') srs.add(sr.id.slice(0, 8))
    }
    return {
      id: host.id,
      cpuCount: Number(sub(host, 'CPUs', 'cpu_count')) || num(sub(host, 'cpus', 'cores')),
      memorySize: num(sub(host, 'memory', 'size')),
      startTime: startOf(host),
      pifs,
      srs: [...srs],
    }
  }

  #devices(vm: XoRecord): VmDevices {
    const vifs: string[] = []
    for (const id of ids(vm['VIFs'])) {
      const vif = this.#driver.getObject(id)
      if (vif !== undefined && typeof vif['device'] === 'string') vifs.push(vif['device'])
    }
    const disks: string[] = []
    for (const id of ids(vm['$VBDs'])) {
      const vbd = this.#driver.getObject(id)
      const match = /^xvd([a-z])$/.exec(String(field(vbd, 'device')))
      if (match?.[1] !== undefined && field(vbd, 'is_cd_drive') !== true) disks.push(match[1])
    }
    return { cpuCount: num(sub(vm, 'CPUs', 'number')), vifs, disks }
  }

  #vmShape(vm: XoRecord): VmShape {
    const devices = this.#devices(vm)
    const defaults = vmDataSources(devices)
    const chosen = this.#chosen.get(vm.id)
    const memorySize = num(sub(vm, 'memory', 'size'))
    const dynamic = sub(vm, 'memory', 'dynamic')
    return {
      ...devices,
      id: vm.id,
      memorySize,
      memoryTarget: Array.isArray(dynamic) && typeof dynamic[1] === 'number' ? dynamic[1] : memorySize,
      agent: vm['managementAgentDetected'] === true,
      startTime: startOf(vm),
      recorded: (name) => chosen?.get(name) ?? defaults.get(name) ?? false,
    }
  }
}
