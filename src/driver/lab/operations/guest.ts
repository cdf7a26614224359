import { incorrectState } from '../../../errors.js'
import type { VmPowerState, VmRecord } from '../../../model/records.js'
import { guestAgentFields } from '../expand-vms.js'
import { LabRandom } from '../random.js'
import { assignAddresses } from './addresses.js'
import { guestOs } from './guest-os.js'
import { addToList, removeFromList } from './lists.js'
import { requireDisksReachable } from './sr-reach.js'
import type { Frozen, Plan } from './plan.js'

/**
 * The runtime side of VMs: where they live, their devices, what their agent
 * reports, and the memory their host gives them. The rules are the seeded
 * lab's: a Running or Paused VM holds its memory and has its devices plugged;
 * a Suspended one stays with its host but holds neither; a Halted one lives
 * in its pool, or on the host of a local SR holding one of its disks.
 */

export const ALL_STATES: readonly VmPowerState[] = ['Running', 'Halted', 'Paused', 'Suspended']

/** States in which a VM runs on its host, memory and devices included. */
export const isLive = (state: VmPowerState): boolean => state === 'Running' || state === 'Paused'

const random = new LabRandom(0x9e57)

export const seconds = (ms: number): number => Math.floor(ms / 1000)

/** Fails with INCORRECT_STATE unless the VM is in one of `allowed`. */
export function requirePowerState(vm: Frozen<VmRecord>, allowed: readonly VmPowerState[]): void {
  if (allowed.includes(vm.power_state)) return
  throw incorrectState({
    actual: vm.power_state,
    expected: allowed.length === 1 ? allowed[0] : [...allowed],
    object: vm.id,
    property: 'power_state',
  })
}

/** What placement reads of a VM, snapshot or template. */
interface Guest {
  readonly $pool: string
  readonly $VBDs: readonly string[]
}

/** The VDIs behind a VM's disk drives (CD drives excluded). */
export function diskIds(plan: Plan, vm: Guest): string[] {
  return vm.$VBDs.flatMap((id) => {
    const vbd = plan.get(id, 'VBD')
    return vbd.is_cd_drive || vbd.VDI === undefined ? [] : [vbd.VDI]
  })
}

/** The hosts of the local SRs among `srIds`. */
export function localHosts(plan: Plan, srIds: readonly string[]): Set<string> {
  const hosts = new Set<string>()
  for (const id of srIds) {
    const sr = plan.get(id, 'SR')
    if (!sr.shared && sr.$container !== sr.$pool) hosts.add(sr.$container)
  }
  return hosts
}

/** The host a VM's disks tie it to, if one of them is on a local SR. */
export function pinnedHost(plan: Plan, vm: Guest): string | undefined {
  const srs = diskIds(plan, vm).map((id) => plan.get(id, 'VDI', 'VDI-snapshot').$SR)
  return [...localHosts(plan, srs)][0]
}

export function haltedContainer(plan: Plan, vm: Guest): string {
  return pinnedHost(plan, vm) ?? vm.$pool
}

/** The host whose resident list has the VM. */
const residence = (vm: Frozen<VmRecord>): string | undefined => (vm.power_state === 'Halted' ? undefined : vm.$container)

/** Host memory in use: the control domain and the live VMs; none when the host is down. */
export function refreshHostMemory(plan: Plan, hostId: string): void {
  const host = plan.edit(hostId, 'host')
  let usage = 0
  if (host.power_state === 'Running') {
    for (const id of host.residentVms) {
      const resident = plan.find(id)
      if (resident === undefined) continue
      const live = resident.type === 'VM-controller' || (resident.type === 'VM' && isLive(resident['power_state'] as VmPowerState))
      if (live) usage += (resident['memory'] as { size: number }).size
    }
  }
  host.memory.usage = usage
}

export const freeMemory = (host: { readonly memory: { readonly size: number; readonly usage: number } }): number =>
  host.memory.size - host.memory.usage

function relocate(plan: Plan, vmId: string, from: string | undefined, to: string | undefined): void {
  if (from !== to) {
    if (from !== undefined) removeFromList(plan.edit(from, 'host').residentVms, vmId)
    if (to !== undefined) addToList(plan.edit(to, 'host').residentVms, vmId)
  }
  if (from !== undefined) refreshHostMemory(plan, from)
  if (to !== undefined && to !== from) refreshHostMemory(plan, to)
}

function plugDevices(plan: Plan, vm: Frozen<VmRecord>, attached: boolean): void {
  for (const id of vm.$VBDs) plan.edit(id, 'VBD').attached = attached
  for (const id of vm.VIFs) plan.edit(id, 'VIF').attached = attached
}

/** What the guest agent reports when the VM boots: its OS, tools, memory use and addresses. */
function reportGuest(plan: Plan, vm: VmRecord): void {
  const os = guestOs(plan, vm)
  if (os !== undefined) {
    vm.os_version = { ...os.osVersion }
    Object.assign(vm, guestAgentFields(os))
  }
  const share = 0.25 + 0.6 * random.fraction(`memory:${vm.id}/${String(vm.startTime)}`)
  vm.memory.usage = Math.round((vm.memory.size * share) / 4096) * 4096
  assignAddresses(plan, vm)
}

const AGENT_FIELDS = ['managementAgentDetected', 'pvDriversDetected', 'pvDriversVersion', 'pvDriversUpToDate', 'xenTools'] as const

type RuntimeFields = Pick<VmRecord, 'startTime' | 'addresses' | 'mainIpAddress' | 'memory' | (typeof AGENT_FIELDS)[number]>

/** Forgets what the guest reported while it ran. */
export function clearRuntime(vm: RuntimeFields): void {
  vm.startTime = null
  vm.addresses = {}
  delete vm.mainIpAddress
  delete vm.memory.usage
  for (const field of AGENT_FIELDS) delete vm[field]
}

/** Halted or Suspended → Running on `hostId`, which the caller has checked. */
export function powerOn(plan: Plan, vmId: string, hostId: string, now: number): void {
  requireDisksReachable(plan, plan.get(vmId, 'VM').$VBDs, hostId)
  const vm = plan.edit(vmId, 'VM')
  const from = residence(vm)
  vm.power_state = 'Running'
  vm.$container = hostId
  vm.startTime = seconds(now)
  plugDevices(plan, vm, true)
  reportGuest(plan, vm)
  relocate(plan, vmId, from, hostId)
}

/** Any state → Halted: memory given back, devices unplugged, guest state forgotten. */
export function powerOff(plan: Plan, vmId: string): void {
  const vm = plan.edit(vmId, 'VM')
  const from = residence(vm)
  vm.power_state = 'Halted'
  clearRuntime(vm)
  vm.os_version = null
  plugDevices(plan, vm, false)
  vm.$container = haltedContainer(plan, vm)
  relocate(plan, vmId, from, undefined)
}

/** Running → Suspended: the memory image goes to disk, the VM stays with its host. */
export function suspend(plan: Plan, vmId: string): void {
  const vm = plan.edit(vmId, 'VM')
  vm.power_state = 'Suspended'
  clearRuntime(vm)
  plugDevices(plan, vm, false)
  refreshHostMemory(plan, vm.$container)
}

export function setPaused(plan: Plan, vmId: string, paused: boolean): void {
  plan.edit(vmId, 'VM').power_state = paused ? 'Paused' : 'Running'
}

/** A new boot of a live VM on the same host: new start time, addresses kept where possible. */
export function reboot(plan: Plan, vmId: string, now: number): void {
  const vm = plan.edit(vmId, 'VM')
  vm.power_state = 'Running'
  vm.startTime = seconds(now)
  reportGuest(plan, vm)
}

/** A live VM moves to another host of its pool, which the caller has checked. */
export function move(plan: Plan, vmId: string, hostId: string): void {
  requireDisksReachable(plan, plan.get(vmId, 'VM').$VBDs, hostId)
  const vm = plan.edit(vmId, 'VM')
  const from = residence(vm)
  vm.$container = hostId
  relocate(plan, vmId, from, hostId)
}
