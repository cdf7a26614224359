/**
 * A VM's RRD data sources, named as XAPI names them (VM.get_data_sources), and
 * which are recorded when nobody chose: the ones XenServer's documentation
 * marks "enabled by default", plus the disks' request rates, which XCP-ng
 * records too (the reference's own example shows them).
 */

export interface VmDevices {
  readonly cpuCount: number
  /** VIF device numbers ('0', '1', ...) */
  readonly vifs: readonly string[]
  /** disk letters of plugged, non-CD VBDs (`xvda` → 'a') */
  readonly disks: readonly string[]
}

const RUNSTATES = ['fullrun', 'full_contention', 'concurrency_hazard', 'blocked', 'partial_run', 'partial_contention'] as const
const VBD_DEFAULT = ['read', 'write', 'iops_read', 'iops_write', 'iops_total'] as const
const VBD_OTHER = ['read_latency', 'write_latency', 'iowait', 'inflight', 'avgqu_sz'] as const
const VIF = ['rx', 'tx', 'rx_errors', 'tx_errors'] as const

/** Every data source of a VM with these devices, and whether it is recorded by default. */
export function vmDataSources(devices: VmDevices): ReadonlyMap<string, boolean> {
  const sources = new Map<string, boolean>()
  for (let i = 0; i < devices.cpuCount; i++) sources.set(`cpu${i}`, true)
  sources.set('cpu_usage', false)
  for (const name of ['memory', 'memory_target', 'memory_internal_free']) sources.set(name, true)
  for (const state of RUNSTATES) sources.set(`runstate_${state}`, false)
  for (const letter of devices.disks) {
    for (const metric of VBD_DEFAULT) sources.set(`vbd_xvd${letter}_${metric}`, true)
    for (const metric of VBD_OTHER) sources.set(`vbd_xvd${letter}_${metric}`, false)
  }
  for (const device of devices.vifs) for (const metric of VIF) sources.set(`vif_${device}_${metric}`, true)
  return sources
}
