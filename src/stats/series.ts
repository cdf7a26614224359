import type { StatsTree, UsageFigures, XapiStats } from '../driver/types.js'
import { vmDataSources, type VmDevices } from './data-sources.js'
import type { StatsWindow } from './granularity.js'

/**
 * Statistics in the shape xo-server gives them from a host's RRDs
 * (`getXapiHostStats`, `getXapiVmStats`): one array per metric, oldest point
 * first, each value already in xo-server's unit (CPU in percent, memory and
 * throughput in bytes, latency in ms), `null` where the RRD holds nothing.
 *
 * This module makes such series for a pool that keeps no RRD (the lab): each
 * point follows the object's usage figures at its instant, the devices share
 * them out with a little noise that depends only on the object, the metric and
 * the instant. The same object at the same instant always gives the same
 * numbers. A driver that reads real RRDs replaces all of it (src/stats/reader.ts).
 */

export type Series = Array<number | null>

/** The object's usage at an instant (ms). */
export type UsageAt = (ms: number) => UsageFigures

export interface HostShape {
  readonly id: string
  readonly cpuCount: number
  readonly memorySize: number
  /** seconds; points before it are null, as a rebooted host's RRD has none */
  readonly startTime: number | undefined
  /** physical interface numbers (`eth0` → '0') */
  readonly pifs: readonly string[]
  /** the first 8 characters of the uuids of the SRs the host has plugged, as XAPI keys their data sources */
  readonly srs: readonly string[]
}

export interface VmShape extends VmDevices {
  readonly id: string
  readonly memorySize: number
  readonly memoryTarget: number
  /** a guest agent reports the memory the guest leaves free */
  readonly agent: boolean
  readonly startTime: number | undefined
  /** whether a data source (XAPI's name) is recorded */
  readonly recorded: (dataSource: string) => boolean
}

/** FNV-1a: a string to 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** 0 to 1, fixed by its three inputs (a murmur3 finaliser over them). */
function noise(seed: number, salt: number, time: number): number {
  let h = (seed ^ Math.imul(salt, 0x9e3779b1) ^ Math.imul(time >>> 0, 0x85ebca6b)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32
}

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value))
/** Five significant digits, as RRD values read. */
const round = (value: number): number => (value === 0 ? 0 : Number(value.toPrecision(5)))

/** One object's samples over a window, and the series built from them. */
class Sampler {
  readonly #seed: number
  readonly #times: readonly number[]
  readonly #samples: ReadonlyArray<UsageFigures | undefined>

  constructor(id: string, window: StatsWindow, startTime: number | undefined, usageAt: UsageAt) {
    this.#seed = hash(id)
    this.#times = window.times
    this.#samples = window.times.map((time) => (startTime !== undefined && time < startTime ? undefined : usageAt(time * 1000)))
  }

  /** `value(usage, jitter)`: jitter is this metric's own noise at the instant, 0 to 1. */
  series(metric: string, value: (usage: UsageFigures, jitter: number) => number): Series {
    const salt = hash(metric)
    return this.#samples.map((usage, k) => (usage === undefined ? null : round(value(usage, noise(this.#seed, salt, this.#times[k] ?? 0)))))
  }
}

const byKey = (keys: readonly string[], make: (key: string) => Series): Record<string, Series> =>
  Object.fromEntries(keys.map((key) => [key, make(key)]))

/** A host's CPU is shared out unevenly between its cores; the mean stays the host's. */
const coreShare = (cpu: number, jitter: number): number => clamp(cpu * (0.6 + 0.8 * jitter), 0, 1) * 100

export function hostSeries(host: HostShape, window: StatsWindow, usageAt: UsageAt): XapiStats {
  const s = new Sampler(host.id, window, host.startTime, usageAt)
  const cores = Array.from({ length: host.cpuCount }, (_, i) => String(i))
  const perSr = (metric: string, value: (usage: UsageFigures, jitter: number) => number): Record<string, Series> =>
    byKey(host.srs, (sr) => s.series(`${metric}_${sr}`, value))
  // Disk requests follow the CPU: a busy host reads and writes more.
  const iops = (scale: number) => (usage: UsageFigures, jitter: number) => usage.cpu * scale * (0.5 + jitter)
  return {
    endTimestamp: window.endTimestamp,
    interval: window.interval,
    stats: {
      cpus: byKey(cores, (core) => s.series(`cpu${core}`, (usage, jitter) => coreShare(usage.cpu, jitter))),
      load: s.series('loadavg', (usage, jitter) => usage.cpu * host.cpuCount * (0.9 + 0.2 * jitter)),
      memory: s.series('memory_total_kib', () => host.memorySize),
      memoryFree: s.series('memory_free_kib', (usage) => host.memorySize - (usage.memory ?? 0)),
      pifs: {
        rx: byKey(host.pifs, (pif) => s.series(`pif_eth${pif}_rx`, (usage, jitter) => usage.cpu * 4e6 * (0.5 + jitter))),
        tx: byKey(host.pifs, (pif) => s.series(`pif_eth${pif}_tx`, (usage, jitter) => usage.cpu * 2.5e6 * (0.5 + jitter))),
      },
      iops: { r: perSr('iops_read', iops(120)), w: perSr('iops_write', iops(200)) },
      ioThroughput: {
        r: perSr('io_throughput_read', (usage, jitter) => iops(120)(usage, jitter) * 32768),
        w: perSr('io_throughput_write', (usage, jitter) => iops(200)(usage, jitter) * 16384),
      },
      latency: {
        r: perSr('read_latency', (usage, jitter) => 0.2 + usage.cpu * 2 * jitter),
        w: perSr('write_latency', (usage, jitter) => 0.4 + usage.cpu * 3 * jitter),
      },
      iowait: perSr('iowait', (usage, jitter) => usage.cpu * 0.05 * jitter),
    },
  }
}

/** The runstates share each instant between them: what the vCPUs run takes from `blocked`. */
const RUNSTATES: ReadonlyArray<readonly [metric: string, dataSource: string, share: number]> = [
  ['runstateFullrun', 'runstate_fullrun', 0.6],
  ['runstatePartialRun', 'runstate_partial_run', 0.3],
  ['runstateFullContention', 'runstate_full_contention', 0.04],
  ['runstatePartialContention', 'runstate_partial_contention', 0.03],
  ['runstateConcurrencyHazard', 'runstate_concurrency_hazard', 0.01],
]

export function vmSeries(vm: VmShape, window: StatsWindow, usageAt: UsageAt): XapiStats {
  const s = new Sampler(vm.id, window, vm.startTime, usageAt)
  const stats: StatsTree = {}
  const has = new Set([...vmDataSources(vm).keys()].filter((name) => vm.recorded(name)))
  const vcpus = Array.from({ length: vm.cpuCount }, (_, i) => String(i)).filter((i) => has.has(`cpu${i}`))
  if (vcpus.length > 0) stats['cpus'] = byKey(vcpus, (i) => s.series(`cpu${i}`, (usage, jitter) => coreShare(usage.cpu, jitter)))
  if (has.has('cpu_usage')) stats['cpuUsage'] = s.series('cpu_usage', (usage) => usage.cpu * 100)
  if (has.has('memory')) stats['memory'] = s.series('memory', () => vm.memorySize)
  if (has.has('memory_target')) stats['memoryTarget'] = s.series('memory_target', () => vm.memoryTarget)
  // Only a guest agent can tell how much of its memory a guest leaves free.
  if (vm.agent && has.has('memory_internal_free')) {
    stats['memoryFree'] = s.series('memory_internal_free', (usage) => vm.memorySize - (usage.memory ?? 0))
  }
  for (const [metric, dataSource, share] of RUNSTATES) {
    if (has.has(dataSource)) stats[metric] = s.series(dataSource, (usage) => usage.cpu * share * 100)
  }
  if (has.has('runstate_blocked')) stats['runstateBlocked'] = s.series('runstate_blocked', (usage) => (1 - usage.cpu * 0.98) * 100)

  const group = (metric: string, keys: ReadonlyArray<readonly [key: string, dataSource: string]>, value: (usage: UsageFigures, jitter: number) => number) => {
    const kept = keys.filter(([, dataSource]) => has.has(dataSource))
    return kept.length === 0 ? undefined : byKey(kept.map(([key]) => key), (key) => s.series(`${metric}_${key}`, value))
  }
  const put = (path: readonly [string, string?], tree: Record<string, Series> | undefined): void => {
    if (tree === undefined) return
    const [first, second] = path
    if (second === undefined) stats[first] = tree
    else ((stats[first] ??= {}) as StatsTree)[second] = tree
  }
  const disk = (suffix: string) => vm.disks.map((letter) => [letter, `vbd_xvd${letter}_${suffix}`] as const)
  const vif = (suffix: string) => vm.vifs.map((device) => [device, `vif_${device}_${suffix}`] as const)
  // A guest's disk and network traffic follow its CPU.
  const busy = (scale: number) => (usage: UsageFigures, jitter: number) => usage.cpu * scale * (0.4 + jitter)
  put(['xvds', 'r'], group('vbd_read', disk('read'), busy(3e5)))
  put(['xvds', 'w'], group('vbd_write', disk('write'), busy(6e5)))
  put(['iops', 'r'], group('vbd_iops_read', disk('iops_read'), busy(20)))
  put(['iops', 'w'], group('vbd_iops_write', disk('iops_write'), busy(40)))
  put(['iops', 'total'], group('vbd_iops_total', disk('iops_total'), busy(60)))
  put(['vbdLatency', 'r'], group('vbd_read_latency', disk('read_latency'), (usage, jitter) => 0.2 + usage.cpu * 2 * jitter))
  put(['vbdLatency', 'w'], group('vbd_write_latency', disk('write_latency'), (usage, jitter) => 0.4 + usage.cpu * 3 * jitter))
  put(['vbdIowait'], group('vbd_iowait', disk('iowait'), (usage, jitter) => usage.cpu * 5 * jitter))
  put(['vbdInflight'], group('vbd_inflight', disk('inflight'), (usage, jitter) => Math.floor(usage.cpu * 4 * jitter)))
  put(['vbdAvgquSz'], group('vbd_avgqu_sz', disk('avgqu_sz'), (usage, jitter) => usage.cpu * 2 * jitter))
  put(['vifs', 'rx'], group('vif_rx', vif('rx'), busy(8e5)))
  put(['vifs', 'tx'], group('vif_tx', vif('tx'), busy(4e5)))
  put(['vifErrors', 'rx'], group('vif_rx_errors', vif('rx_errors'), () => 0))
  put(['vifErrors', 'tx'], group('vif_tx_errors', vif('tx_errors'), () => 0))
  return { endTimestamp: window.endTimestamp, interval: window.interval, stats }
}
