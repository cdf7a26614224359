import { incorrectState, invalidParameters } from '../../../errors.js'
import { freeMemory, refreshHostMemory, requirePowerState } from './guest.js'
import type { Plan } from './plan.js'

/**
 * A VM's vCPU and memory limits as XAPI sets them, one by one where Keel's
 * PATCH sets them together: for the XAPI simulator's VM.set_VCPUs_* and
 * VM.set_memory_* messages.
 */
export interface VmLimits {
  readonly cpus?: { readonly max: number; readonly atStartup: number }
  /** bytes */
  readonly memory?: { readonly staticMin: number; readonly staticMax: number; readonly dynamicMin: number; readonly dynamicMax: number }
}

function setCpus(plan: Plan, id: string, { max, atStartup }: NonNullable<VmLimits['cpus']>): void {
  if (!(atStartup >= 1 && atStartup <= max)) throw invalidParameters([{ path: 'body.VCPUs_at_startup', message: 'must be between 1 and VCPUs_max' }])
  const vm = plan.edit(id, 'VM')
  // The maximum is what the guest booted with: it changes only while halted.
  if (max !== vm.CPUs.max) requirePowerState(vm, ['Halted'])
  vm.CPUs = { max, number: atStartup }
}

function setMemory(plan: Plan, id: string, { staticMin, staticMax, dynamicMin, dynamicMax }: NonNullable<VmLimits['memory']>): void {
  if (!(staticMin <= dynamicMin && dynamicMin <= dynamicMax && dynamicMax <= staticMax) || dynamicMax < 1) {
    throw invalidParameters([{ path: 'body.memory', message: 'needs static_min <= dynamic_min <= dynamic_max <= static_max' }])
  }
  const vm = plan.edit(id, 'VM')
  const [currentMin, currentMax] = vm.memory.static
  if (vm.power_state === 'Halted') {
    vm.memory = { dynamic: [dynamicMin, dynamicMax], static: [staticMin, staticMax], size: dynamicMax }
    return
  }
  requirePowerState(vm, ['Running', 'Paused'])
  if (staticMin !== currentMin || staticMax !== currentMax) requirePowerState(vm, ['Halted'])
  // A live guest balloons to its dynamic maximum: the host must have the growth free.
  const host = plan.get(vm.$container, 'host')
  const growth = dynamicMax - vm.memory.size
  if (growth > freeMemory(host)) throw incorrectState({ actual: freeMemory(host), expected: growth, object: host.id, property: 'memory_free' })
  vm.memory = {
    ...vm.memory,
    dynamic: [dynamicMin, dynamicMax],
    size: dynamicMax,
    ...(vm.memory.usage === undefined ? {} : { usage: Math.min(vm.memory.usage, dynamicMax) }),
  }
  refreshHostMemory(plan, vm.$container)
}

/** Sets the limits given, every one or none (the plan is committed by the caller). */
export function setVmLimits(plan: Plan, id: string, limits: VmLimits): void {
  if (limits.cpus !== undefined) setCpus(plan, id, limits.cpus)
  if (limits.memory !== undefined) setMemory(plan, id, limits.memory)
}
