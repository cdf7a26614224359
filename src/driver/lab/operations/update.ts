import { invalidParameters } from '../../../errors.js'
import type { VifRecord, VmRecord } from '../../../model/records.js'
import type { XoRecord } from '../../types.js'
import { freeMemory, refreshHostMemory, requirePowerState } from './guest.js'
import type { LabType, Plan } from './plan.js'
import { accountDisk, freeSpace, isThick } from './sr-usage.js'

/**
 * PATCH: every field is checked and applied to one plan, and the plan is
 * committed only if all of them passed, so a bad field changes nothing. A
 * setter returns why its value cannot be taken, or undefined; state problems
 * (a suspended VM's memory, say) are a 409 thrown at once.
 */
type Setter = (plan: Plan, id: string, value: unknown) => string | undefined

/** The fields PATCH may change on one type, by name. */
export type Setters = Readonly<Record<string, Setter>>

const isString = (value: unknown): value is string => typeof value === 'string'
const isInteger = (value: unknown): value is number => Number.isSafeInteger(value)
const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString)

const text =
  (apply: (plan: Plan, id: string, value: string) => void, minLength = 0): Setter =>
  (plan, id, value) => {
    if (!isString(value) || value.length < minLength) return minLength > 0 ? 'must be a non-empty string' : 'must be a string'
    apply(plan, id, value)
    return undefined
  }

function setCpus(plan: Plan, id: string, value: unknown): string | undefined {
  if (!isInteger(value) || value < 1) return 'must be a positive integer'
  const vm = plan.edit(id, 'VM')
  requirePowerState(vm, ['Halted', 'Running'])
  if (vm.power_state === 'Halted') {
    vm.CPUs = { max: value, number: value }
    return undefined
  }
  // A running guest can only get vCPUs hot-plugged up to its maximum.
  if (value > vm.CPUs.max) return `a running VM can have at most ${vm.CPUs.max} vCPUs (its maximum); halt it to raise that`
  vm.CPUs.number = value
  return undefined
}

function setMemory(plan: Plan, id: string, value: unknown): string | undefined {
  if (!isInteger(value) || value < 1) return 'must be a positive integer'
  const vm = plan.edit(id, 'VM')
  requirePowerState(vm, ['Halted', 'Running', 'Paused'])
  const [staticMin = value, staticMax = value] = vm.memory.static
  if (vm.power_state === 'Halted') {
    vm.memory = { dynamic: [value, value], static: [Math.min(staticMin, value), value], size: value }
    return undefined
  }
  if (value > staticMax) return `a running VM can have at most ${staticMax} bytes (its static maximum); halt it to raise that`
  if (value < staticMin) return `a running VM needs at least ${staticMin} bytes (its static minimum)`
  const host = plan.get(vm.$container, 'host')
  const growth = value - vm.memory.size
  if (growth > freeMemory(host)) return `host ${host.id} has ${freeMemory(host)} bytes free, ${growth} more are needed`
  vm.memory = {
    ...vm.memory,
    dynamic: [value, value],
    size: value,
    ...(vm.memory.usage === undefined ? {} : { usage: Math.min(vm.memory.usage, value) }),
  }
  refreshHostMemory(plan, vm.$container)
  return undefined
}

const HA_MODES: ReadonlyArray<VmRecord['high_availability']> = ['', 'restart', 'best-effort']

const vmSetters: Setters = {
  nameLabel: text((plan, id, value) => (plan.edit(id, 'VM').name_label = value), 1),
  nameDescription: text((plan, id, value) => (plan.edit(id, 'VM').name_description = value)),
  cpus: setCpus,
  memory: setMemory,
  autoPoweron: (plan, id, value) => {
    if (typeof value !== 'boolean') return 'must be a boolean'
    const vm = plan.edit(id, 'VM')
    vm.auto_poweron = value
    // XAPI keeps the flag in other_config, where the seeded VMs have it too.
    if (value) vm.other['auto_poweron'] = 'true'
    else delete vm.other['auto_poweron']
    return undefined
  },
  highAvailability: (plan, id, value) => {
    const mode = HA_MODES.find((candidate) => candidate === value)
    if (mode === undefined) return `must be one of ${HA_MODES.map((m) => JSON.stringify(m)).join(', ')}`
    plan.edit(id, 'VM').high_availability = mode
    return undefined
  },
  startDelay: (plan, id, value) => {
    if (!isInteger(value) || value < 0) return 'must be a non-negative integer'
    plan.edit(id, 'VM').startDelay = value
    return undefined
  },
  notes: text((plan, id, value) => {
    const vm = plan.edit(id, 'VM')
    if (value === '') delete vm.notes
    else vm.notes = value
  }),
  tags: (plan, id, value) => {
    if (!isStringArray(value)) return 'must be an array of strings'
    plan.edit(id, 'VM').tags = [...new Set(value)]
    return undefined
  },
}

function growDisk(plan: Plan, id: string, value: unknown): string | undefined {
  if (!isInteger(value) || value < 1) return 'must be a positive integer'
  const vdi = plan.edit(id, 'VDI')
  if (value < vdi.size) return `a disk can only grow: it has ${vdi.size} bytes`
  const sr = plan.get(vdi.$SR, 'SR')
  // As for a new disk, the added bytes must fit in the SR; only a thick SR allocates them now.
  const growth = value - vdi.size
  if (growth > freeSpace(sr)) return `SR ${sr.id} has ${freeSpace(sr)} bytes free, ${growth} more are needed`
  const extra = isThick(sr) ? growth : 0
  accountDisk(plan, vdi, -1)
  vdi.size = value
  vdi.usage += extra
  vdi.chainPhysicalUsage += extra
  accountDisk(plan, vdi, 1)
  return undefined
}

const vdiSetters: Setters = {
  name_label: text((plan, id, value) => (plan.edit(id, 'VDI').name_label = value), 1),
  name_description: text((plan, id, value) => (plan.edit(id, 'VDI').name_description = value)),
  size: growDisk,
}

const LOCKING_MODES: ReadonlyArray<VifRecord['lockingMode']> = ['network_default', 'locked', 'unlocked', 'disabled']

const vifSetters: Setters = {
  lockingMode: (plan, id, value) => {
    const mode = LOCKING_MODES.find((candidate) => candidate === value)
    if (mode === undefined) return `must be one of ${LOCKING_MODES.join(', ')}`
    plan.edit(id, 'VIF').lockingMode = mode
    return undefined
  },
  allowedIpv4Addresses: (plan, id, value) => {
    if (!isStringArray(value)) return 'must be an array of IPv4 addresses'
    plan.edit(id, 'VIF').allowedIpv4Addresses = [...new Set(value)]
    return undefined
  },
  allowedIpv6Addresses: (plan, id, value) => {
    if (!isStringArray(value)) return 'must be an array of IPv6 addresses'
    plan.edit(id, 'VIF').allowedIpv6Addresses = [...new Set(value)]
    return undefined
  },
  rateLimit: (plan, id, value) => {
    const vif = plan.edit(id, 'VIF')
    if (value === null) delete vif.rateLimit
    else if (isInteger(value) && value >= 1) vif.rateLimit = value
    else return 'must be a positive integer (kB/s) or null'
    return undefined
  },
  txChecksumming: (plan, id, value) => {
    if (typeof value !== 'boolean') return 'must be a boolean'
    plan.edit(id, 'VIF').txChecksumming = value
    return undefined
  },
}

type Named = 'network' | 'SR' | 'host' | 'pool'
const nameSetters = (type: Named): Setters => ({
  name_label: text((plan, id, value) => (plan.edit(id, type).name_label = value), 1),
  name_description: text((plan, id, value) => (plan.edit(id, type).name_description = value)),
})

/** The lab's PATCH, by type. */
export const settersByType = {
  VM: vmSetters,
  VDI: vdiSetters,
  VIF: vifSetters,
  network: nameSetters('network'),
  SR: nameSetters('SR'),
  host: nameSetters('host'),
  pool: nameSetters('pool'),
} as const satisfies Partial<Record<LabType, Setters>>

/** Applies `patch` to the plan with the setters of the object's type, every field or none. */
export function patchRecord(plan: Plan, object: XoRecord, setters: Setters, patch: Readonly<Record<string, unknown>>): void {
  const errors: Array<{ path: string; message: string }> = []
  for (const [field, value] of Object.entries(patch)) {
    const setter = Object.hasOwn(setters, field) ? setters[field] : undefined
    const problem = setter === undefined ? 'is not a field that can be changed' : setter(plan, object.id, value)
    if (problem !== undefined) errors.push({ path: `body.${field}`, message: problem })
  }
  if (errors.length > 0) throw invalidParameters(errors)
}
