import { incorrectState, invalidParameters, type KeelError } from '../../../errors.js'
import type { HostRecord, VmRecord } from '../../../model/records.js'
import { freeMemory, isLive, pinnedHost } from './guest.js'
import type { Frozen, Plan } from './plan.js'

/**
 * Where VMs may run. A host takes a VM when it is up, enabled, in the VM's
 * pool, can reach its disks and has the memory free. A host the caller chose
 * and that cannot do it is a 422 (a bad parameter) or a 409 (down or
 * disabled); when the lab chooses and finds none, it is a 409.
 */

type Host = Frozen<HostRecord>
type Vm = Frozen<VmRecord>

export const hostsOfPool = (plan: Plan, poolId: string): Host[] => plan.all('host').filter((host) => host.$pool === poolId)

const canRun = (host: Host): boolean => host.power_state === 'Running' && host.enabled

/** Why `host` cannot take VMs now, as the 409 to answer. */
function hostStateProblem(host: Host): KeelError | undefined {
  if (host.power_state !== 'Running') {
    return incorrectState({ actual: host.power_state, expected: 'Running', object: host.id, property: 'power_state' })
  }
  if (!host.enabled) return incorrectState({ actual: false, expected: true, object: host.id, property: 'enabled' })
  return undefined
}

const hostIdParam = (message: string): KeelError => invalidParameters([{ path: 'body.hostId', message }])

/** Checks the host a caller chose for `vm`; `moving` is true for a live migration. */
export function checkChosenHost(plan: Plan, vm: Vm, hostId: string, moving: boolean): Host {
  const host = plan.get(hostId, 'host')
  if (host.$pool !== vm.$pool) throw hostIdParam(`host ${host.id} is not in the VM's pool ${vm.$pool}`)
  if (moving && host.id === vm.$container) throw hostIdParam(`the VM already runs on host ${host.id}`)
  const pinned = pinnedHost(plan, vm)
  if (moving && pinned !== undefined) throw hostIdParam(`the VM has disks on a local SR of host ${pinned}, which other hosts cannot reach`)
  if (pinned !== undefined && pinned !== host.id) throw hostIdParam(`the VM has disks on a local SR of host ${pinned}`)
  const problem = hostStateProblem(host)
  if (problem !== undefined) throw problem
  const needed = vm.memory.size
  if (freeMemory(host) < needed) {
    throw hostIdParam(`host ${host.id} has ${freeMemory(host)} bytes of memory free, the VM needs ${needed}`)
  }
  return host
}

/** The host for a VM to start or resume on: its local SR's host, else `preferred`, else the one with most free memory. */
export function chooseHost(plan: Plan, vm: Vm, preferred?: string): Host {
  const needed = vm.memory.size
  const pinned = pinnedHost(plan, vm)
  if (pinned !== undefined) {
    const host = plan.get(pinned, 'host')
    const problem = hostStateProblem(host)
    if (problem !== undefined) throw problem
    if (freeMemory(host) < needed) throw notEnoughMemory(host, needed)
    return host
  }
  const candidates = hostsOfPool(plan, vm.$pool).filter(canRun)
  const keep = candidates.find((host) => host.id === preferred && freeMemory(host) >= needed)
  if (keep !== undefined) return keep
  const best = mostFree(candidates)
  if (best === undefined) throw incorrectState({ actual: 0, expected: needed, object: vm.$pool, property: 'free memory' })
  if (freeMemory(best) < needed) throw notEnoughMemory(best, needed)
  return best
}

const notEnoughMemory = (host: Host, needed: number): KeelError =>
  incorrectState({ actual: freeMemory(host), expected: needed, object: host.id, property: 'free memory' })

function mostFree<T extends { readonly memory: { readonly size: number; readonly usage: number } }>(hosts: readonly T[]): T | undefined {
  let best: T | undefined
  for (const host of hosts) if (best === undefined || freeMemory(host) > freeMemory(best)) best = host
  return best
}

interface Move {
  readonly vm: string
  readonly to: string
}

/** The live guests of a host (its control domain excluded). */
export const liveGuests = (plan: Plan, host: Host): Vm[] =>
  host.residentVms.flatMap((id) => {
    const record = plan.find(id)
    return record?.type === 'VM' && isLive(record['power_state'] as VmRecord['power_state']) ? [plan.get(id, 'VM')] : []
  })

/** What an evacuation does with VMs whose disks are on the host's local SR: refuse, or leave them (to be shut down). */
export type PinnedVms = 'refuse' | 'leave'

/** The live guests that cannot leave a host: some disk is on its local SR. */
export const pinnedGuests = (plan: Plan, host: Host): Vm[] =>
  liveGuests(plan, host).filter((vm) => pinnedHost(plan, vm) !== undefined)

/**
 * Where each live VM of a host goes before the host stops: largest VMs
 * first, each to the enabled running host of the pool with the most free
 * memory at that point. A VM that cannot go anywhere (no room, or disks on
 * the host's local SR when those are refused) makes it a 409: that VM would
 * have to be halted first.
 */
export function planEvacuation(plan: Plan, hostId: string, pinned: PinnedVms): Move[] {
  const host = plan.get(hostId, 'host')
  const targets = hostsOfPool(plan, host.$pool)
    .filter((other) => other.id !== host.id && canRun(other))
    .map((other) => ({ id: other.id, memory: { size: other.memory.size, usage: other.memory.usage } }))
  const vms = liveGuests(plan, host).sort((a, b) => b.memory.size - a.memory.size)
  return vms.flatMap((vm) => {
    const stuck = pinnedHost(plan, vm) !== undefined
    if (stuck && pinned === 'leave') return []
    const target = stuck ? undefined : mostFree(targets)
    if (target === undefined || freeMemory(target) < vm.memory.size) {
      throw incorrectState({ actual: vm.power_state, expected: 'Halted', object: vm.id, property: 'power_state' })
    }
    target.memory.usage += vm.memory.size
    return [{ vm: vm.id, to: target.id }]
  })
}
