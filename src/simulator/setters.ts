import { isIPv4, isIPv6 } from 'node:net'
import type { VmLimits } from '../driver/lab/operations/vm-limits.js'
import { isKeelError } from '../errors.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import { text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext, Handler } from './context.js'
import { operationNotAllowed, vmBadPowerState, XapiFailure } from './failures.js'
import { setField } from './writes.js'

/**
 * The setters XAPI declares explicitly (their fields are read-only to the
 * implicit set_<field>): a VM's vCPUs and memory, its HA priority and start
 * delay, a VDI's and an SR's names, a VIF's locking, with XAPI's checks
 * (xapi_vm_helpers.ml, vm_memory_constraints.ml, xapi_vif_helpers.ml). What
 * the lab models is set in the lab; the rest as writes.ts sets any field.
 */

const VCPUS_RULE = 'VCPU values must satisfy: 0 < VCPUs_at_startup ≤ VCPUs_max'
const MEMORY_RULE = 'Memory limits must satisfy: static_min <= dynamic_min <= dynamic_max <= static_max'

type Memory = NonNullable<VmLimits['memory']>
type Cpus = NonNullable<VmLimits['cpus']>

interface Vm {
  readonly ref: string
  readonly record: Readonly<Record<string, XmlRpcValue>>
  /** in lower case, as XAPI writes power states in its errors */
  readonly state: string
}

function vmOf(context: CallContext, ref: XmlRpcValue | undefined): Vm {
  const stored = context.db.expect('VM', text(ref))
  return { ref: stored.ref, record: stored.record, state: text(stored.record['power_state']).toLowerCase() }
}

const int = (vm: Vm, field: string): number => Number(vm.record[field])
const cpusOf = (vm: Vm): Cpus => ({ max: int(vm, 'VCPUs_max'), atStartup: int(vm, 'VCPUs_at_startup') })
const memoryOf = (vm: Vm): Memory => ({
  staticMin: int(vm, 'memory_static_min'),
  staticMax: int(vm, 'memory_static_max'),
  dynamicMin: int(vm, 'memory_dynamic_min'),
  dynamicMax: int(vm, 'memory_dynamic_max'),
})

/** A lab refusal of new limits as XAPI words it. */
function limitsFailure(error: unknown, ref: string): unknown {
  if (!isKeelError(error)) return error
  const data = error.data ?? {}
  if (error.code === 'INCORRECT_STATE' && data['property'] === 'power_state') {
    const expected = Array.isArray(data['expected']) ? String(data['expected'][0]) : String(data['expected'])
    return vmBadPowerState(ref, expected, String(data['actual']))
  }
  if (error.code === 'INCORRECT_STATE' && data['property'] === 'memory_free') return new XapiFailure('HOST_NOT_ENOUGH_FREE_MEMORY', String(data['expected']), String(data['actual']))
  return operationNotAllowed(error.message)
}

/**
 * Sets a VM's limits: in the lab for a VM; laid over the record for a
 * template or snapshot, whose limits the lab keeps with its other settings.
 */
async function applyLimits(context: CallContext, vm: Vm, limits: VmLimits): Promise<string> {
  const lab = context.feed.labRecord(vm.ref)
  if (lab?.type === 'VM' && lab['_xapiRef'] === vm.ref) {
    try {
      await context.driver.setVmLimits(lab, limits)
    } catch (error) {
      throw limitsFailure(error, vm.ref)
    }
    return ''
  }
  const { cpus, memory } = limits
  context.feed.overlay(vm.ref, {
    ...(cpus === undefined ? {} : { VCPUs_max: cpus.max, VCPUs_at_startup: cpus.atStartup }),
    ...(memory === undefined
      ? {}
      : { memory_static_min: memory.staticMin, memory_static_max: memory.staticMax, memory_dynamic_min: memory.dynamicMin, memory_dynamic_max: memory.dynamicMax }),
  })
  return ''
}

/** New vCPU counts: the maximum only while halted, the live count only while running. */
async function cpus(context: CallContext, ref: XmlRpcValue | undefined, change: (current: Cpus) => Cpus, live = false): Promise<string> {
  const vm = vmOf(context, ref)
  const current = cpusOf(vm)
  const next = change(current)
  if (live && vm.state !== 'running') throw vmBadPowerState(vm.ref, 'running', vm.state)
  if (next.max !== current.max && vm.state !== 'halted') throw vmBadPowerState(vm.ref, 'halted', vm.state)
  const changed = next.max !== current.max ? next.max : next.atStartup
  if (!(next.atStartup >= 1 && next.atStartup <= next.max)) throw new XapiFailure('INVALID_VALUE', VCPUS_RULE, String(changed))
  return applyLimits(context, vm, { cpus: next })
}

/** New memory limits: static ones only while halted, dynamic ones while halted, running or paused. */
async function memory(context: CallContext, ref: XmlRpcValue | undefined, change: (current: Memory) => Memory): Promise<string> {
  const vm = vmOf(context, ref)
  const current = memoryOf(vm)
  const next = change(current)
  const staticChange = next.staticMin !== current.staticMin || next.staticMax !== current.staticMax
  if (staticChange && vm.state !== 'halted') throw vmBadPowerState(vm.ref, 'halted', vm.state)
  if (!['halted', 'running', 'paused'].includes(vm.state)) throw vmBadPowerState(vm.ref, 'running', vm.state)
  if (!(next.staticMin <= next.dynamicMin && next.dynamicMin <= next.dynamicMax && next.dynamicMax <= next.staticMax) || next.dynamicMax < 1) {
    throw new XapiFailure('MEMORY_CONSTRAINT_VIOLATION', MEMORY_RULE)
  }
  return applyLimits(context, vm, { memory: next })
}

const num = (value: XmlRpcValue | undefined): number => Number(value)

/** A field set as writes.ts sets it: in the lab where it models the field. */
const plainSetter =
  (cls: string, field: string, check: (value: XmlRpcValue | undefined) => void = () => {}): Handler =>
  async (context, [ref, value]) => {
    check(value)
    await setField(context, cls, text(ref), field, value ?? '')
    return ''
  }

/** XAPI checks each allowed address (xapi_vif_helpers.ml). */
const addresses =
  (valid: (address: string) => boolean): ((value: XmlRpcValue | undefined) => void) =>
  (value) => {
    for (const address of Array.isArray(value) ? value.map(text) : []) if (!valid(address)) throw new XapiFailure('INVALID_IP_ADDRESS_SPECIFIED', address)
  }

const setters: Readonly<Record<string, Handler>> = {
  'VM.set_VCPUs_max': (context, [ref, value]) => cpus(context, ref, (c) => ({ ...c, max: num(value) })),
  'VM.set_VCPUs_at_startup': (context, [ref, value]) => cpus(context, ref, (c) => ({ ...c, atStartup: num(value) })),
  'VM.set_VCPUs_number_live': (context, [ref, value]) => cpus(context, ref, (c) => ({ ...c, atStartup: num(value) }), true),
  'VM.set_memory_limits': (context, [ref, staticMin, staticMax, dynamicMin, dynamicMax]) =>
    memory(context, ref, () => ({ staticMin: num(staticMin), staticMax: num(staticMax), dynamicMin: num(dynamicMin), dynamicMax: num(dynamicMax) })),
  'VM.set_memory_static_range': (context, [ref, min, max]) => memory(context, ref, (m) => ({ ...m, staticMin: num(min), staticMax: num(max) })),
  'VM.set_memory_dynamic_range': (context, [ref, min, max]) => memory(context, ref, (m) => ({ ...m, dynamicMin: num(min), dynamicMax: num(max) })),
  // As XAPI documents it: static_max and the dynamic range to the value, static_min untouched.
  'VM.set_memory': (context, [ref, value]) => memory(context, ref, (m) => ({ ...m, staticMax: num(value), dynamicMin: num(value), dynamicMax: num(value) })),
  'VM.set_memory_static_min': (context, [ref, value]) => memory(context, ref, (m) => ({ ...m, staticMin: num(value) })),
  'VM.set_memory_static_max': (context, [ref, value]) => memory(context, ref, (m) => ({ ...m, staticMax: num(value) })),
  'VM.set_memory_dynamic_min': (context, [ref, value]) => memory(context, ref, (m) => ({ ...m, dynamicMin: num(value) })),
  'VM.set_memory_dynamic_max': (context, [ref, value]) => memory(context, ref, (m) => ({ ...m, dynamicMax: num(value) })),
  'VM.set_ha_restart_priority': plainSetter('VM', 'ha_restart_priority'),
  'VM.set_start_delay': plainSetter('VM', 'start_delay', (value) => {
    if (num(value) < 0) throw new XapiFailure('INVALID_VALUE', 'start_delay', text(value))
  }),
  'VDI.set_name_label': plainSetter('VDI', 'name_label'),
  'VDI.set_name_description': plainSetter('VDI', 'name_description'),
  'SR.set_name_label': plainSetter('SR', 'name_label'),
  'SR.set_name_description': plainSetter('SR', 'name_description'),
  'VIF.set_locking_mode': plainSetter('VIF', 'locking_mode'),
  'VIF.set_ipv4_allowed': plainSetter('VIF', 'ipv4_allowed', addresses(isIPv4)),
  'VIF.set_ipv6_allowed': plainSetter('VIF', 'ipv6_allowed', addresses(isIPv6)),
}

/** The explicit setters, each also as Async.<Class>.<message>. */
export const setterHandlers: Readonly<Record<string, Explicit>> = withAsync(setters)
