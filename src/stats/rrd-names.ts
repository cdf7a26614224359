/**
 * XAPI's RRD data sources and the statistics paths xo-server gives them
 * (`xapi-stats.mjs`): `cpu3` of a host is `cpus.3`, in percent where XAPI
 * records a fraction. A `*` stands for a device (a core, an interface, a disk
 * letter, the first 8 characters of an SR's uuid), the same in both names.
 * `scale` turns XAPI's unit into xo-server's: memory in KiB to bytes, CPU to
 * percent, SR throughput in MiB/s to bytes/s, latencies in µs to ms.
 */
export interface RrdName {
  readonly dataSource: string
  readonly path: readonly string[]
  readonly scale: number
}

const rule = (dataSource: string, path: string, scale = 1): RrdName => ({ dataSource, path: path.split('.'), scale })

export const HOST_RRD_NAMES: readonly RrdName[] = [
  rule('cpu*', 'cpus.*', 100),
  rule('loadavg', 'load'),
  rule('memory_total_kib', 'memory', 1024),
  rule('memory_free_kib', 'memoryFree', 1024),
  rule('pif_eth*_rx', 'pifs.rx.*'),
  rule('pif_eth*_tx', 'pifs.tx.*'),
  rule('iops_read_*', 'iops.r.*'),
  rule('iops_write_*', 'iops.w.*'),
  rule('io_throughput_read_*', 'ioThroughput.r.*', 2 ** 20),
  rule('io_throughput_write_*', 'ioThroughput.w.*', 2 ** 20),
  rule('read_latency_*', 'latency.r.*', 1e-3),
  rule('write_latency_*', 'latency.w.*', 1e-3),
  rule('iowait_*', 'iowait.*'),
]

export const VM_RRD_NAMES: readonly RrdName[] = [
  rule('cpu*', 'cpus.*', 100),
  rule('cpu_usage', 'cpuUsage', 100),
  rule('memory', 'memory'),
  rule('memory_target', 'memoryTarget'),
  rule('memory_internal_free', 'memoryFree', 1024),
  rule('runstate_fullrun', 'runstateFullrun', 100),
  rule('runstate_partial_run', 'runstatePartialRun', 100),
  rule('runstate_full_contention', 'runstateFullContention', 100),
  rule('runstate_partial_contention', 'runstatePartialContention', 100),
  rule('runstate_concurrency_hazard', 'runstateConcurrencyHazard', 100),
  rule('runstate_blocked', 'runstateBlocked', 100),
  rule('vbd_xvd*_read', 'xvds.r.*'),
  rule('vbd_xvd*_write', 'xvds.w.*'),
  rule('vbd_xvd*_iops_read', 'iops.r.*'),
  rule('vbd_xvd*_iops_write', 'iops.w.*'),
  rule('vbd_xvd*_iops_total', 'iops.total.*'),
  rule('vbd_xvd*_read_latency', 'vbdLatency.r.*', 1e-3),
  rule('vbd_xvd*_write_latency', 'vbdLatency.w.*', 1e-3),
  rule('vbd_xvd*_iowait', 'vbdIowait.*'),
  rule('vbd_xvd*_inflight', 'vbdInflight.*'),
  rule('vbd_xvd*_avgqu_sz', 'vbdAvgquSz.*'),
  rule('vif_*_rx', 'vifs.rx.*'),
  rule('vif_*_tx', 'vifs.tx.*'),
  rule('vif_*_rx_errors', 'vifErrors.rx.*'),
  rule('vif_*_tx_errors', 'vifErrors.tx.*'),
]

/** A device name holds no underscore, so `vif_0_rx` is never read as `vif_*_rx_errors`'s device. */
const DEVICE = '([^_]+)'
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const patterns = new WeakMap<RrdName, RegExp>()
const patternOf = (name: RrdName): RegExp => {
  let pattern = patterns.get(name)
  if (pattern === undefined) patterns.set(name, (pattern = new RegExp(`^${name.dataSource.split('*').map(escape).join(DEVICE)}$`)))
  return pattern
}

/** The statistics path and scale of a data source, or undefined for one xo-server does not read. */
export function pathOfDataSource(names: readonly RrdName[], dataSource: string): { readonly path: string[]; readonly scale: number } | undefined {
  for (const name of names) {
    const device = patternOf(name).exec(dataSource)
    if (device === null) continue
    return { path: name.path.map((part) => (part === '*' ? (device[1] ?? '') : part)), scale: name.scale }
  }
  return undefined
}

/** The data source of a statistics path (`['cpus', '3']`), or undefined. */
export function dataSourceOfPath(names: readonly RrdName[], path: readonly string[]): { readonly dataSource: string; readonly scale: number } | undefined {
  for (const name of names) {
    if (name.path.length !== path.length || !name.path.every((part, i) => part === '*' || part === path[i])) continue
    const device = path[name.path.indexOf('*')]
    return { dataSource: device === undefined ? name.dataSource : name.dataSource.replace('*', device), scale: name.scale }
  }
  return undefined
}
