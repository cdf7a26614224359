import { incorrectState, invalidParameters } from '../../../errors.js'
import type { Target, XapiFields } from './context.js'

/** One field's change, planned: applied, and taken back if a later field of the same PATCH fails. */
export interface Edit {
  apply(): Promise<void>
  /** absent when the change cannot be taken back (a disk grown): such edits run last */
  undo?(): Promise<void>
}

/** Plans a field's change from the current record, or says why the value cannot be taken. */
type Planner = (target: Target, value: unknown, current: XapiFields) => Edit | string

export type Planners = Readonly<Record<string, Planner>>

const isString = (value: unknown): value is string => typeof value === 'string'
const isInteger = (value: unknown): value is number => Number.isSafeInteger(value)
const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString)
const numberOf = (value: unknown): number => (typeof value === 'number' ? value : Number(value))
const mapOf = (value: unknown): Readonly<Record<string, string>> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)])) : {}

/** `<cls>.set_<field>`, taken back by setting the value it had. */
const setter = (field: string, message = `set_${field}`): ((target: Target, value: unknown, current: XapiFields) => Edit) => ({ pool, ref, cls }, value, current) => ({
  apply: async () => void (await pool.call(`${cls}.${message}`, [ref, value])),
  undo: async () => void (await pool.call(`${cls}.${message}`, [ref, current[field]])),
})

const text =
  (field: string, minLength = 0): Planner =>
  (target, value, current) => {
    if (!isString(value) || value.length < minLength) return minLength > 0 ? 'must be a non-empty string' : 'must be a string'
    return setter(field)(target, value, current)
  }

/** One entry of other_config (`undefined` removes it), as the reference keeps flags and notes there. */
function otherConfigEntry({ pool, ref, cls }: Target, key: string, value: string | undefined, current: XapiFields): Edit {
  const put = async (entry: string | undefined): Promise<void> => {
    await pool.call(`${cls}.remove_from_other_config`, [ref, key])
    if (entry !== undefined) await pool.call(`${cls}.add_to_other_config`, [ref, key, entry])
  }
  return { apply: () => put(value), undo: () => put(mapOf(current['other_config'])[key]) }
}

/** Edits run one after the other. */
const sequence = (...edits: Edit[]): Edit => ({
  apply: async () => {
    for (const edit of edits) await edit.apply()
  },
  undo: async () => {
    for (const edit of [...edits].reverse()) await edit.undo?.()
  },
})

const powerState = (current: XapiFields): string => {
  const state = String(current['power_state'])
  return `${state.charAt(0).toUpperCase()}${state.slice(1)}`
}

function requirePowerState(target: Target, current: XapiFields, allowed: readonly string[]): void {
  const actual = powerState(current)
  if (!allowed.includes(actual)) throw incorrectState({ actual, expected: allowed.length === 1 ? allowed[0] : [...allowed], object: target.object.id, property: 'power_state' })
}

const cpus: Planner = (target, value, current) => {
  if (!isInteger(value) || value < 1) return 'must be a positive integer'
  requirePowerState(target, current, ['Halted', 'Running'])
  const max = numberOf(current['VCPUs_max'])
  if (powerState(current) === 'Running') {
    // A running guest can only get vCPUs hot-plugged up to its maximum.
    if (value > max) return `a running VM can have at most ${max} vCPUs (its maximum); halt it to raise that`
    // As the reference: the count at the next start, and the vCPUs plugged now.
    const live = numberOf(current['VCPUs_at_startup'])
    return sequence(setter('VCPUs_at_startup')(target, value, current), {
      apply: async () => void (await target.pool.call('VM.set_VCPUs_number_live', [target.ref, value])),
      undo: async () => void (await target.pool.call('VM.set_VCPUs_number_live', [target.ref, live])),
    })
  }
  // XAPI keeps VCPUs_at_startup ≤ VCPUs_max at every step: raise the maximum first, lower it last.
  const atStartup = setter('VCPUs_at_startup')(target, value, current)
  const maximum = setter('VCPUs_max')(target, value, current)
  return value > max ? sequence(maximum, atStartup) : sequence(atStartup, maximum)
}

const memory: Planner = (target, value, current) => {
  if (!isInteger(value) || value < 1) return 'must be a positive integer'
  requirePowerState(target, current, ['Halted', 'Running', 'Paused'])
  const { pool, ref } = target
  const [staticMin, staticMax, dynamicMin, dynamicMax] = ['memory_static_min', 'memory_static_max', 'memory_dynamic_min', 'memory_dynamic_max'].map((field) => numberOf(current[field])) as [number, number, number, number]
  if (powerState(current) === 'Halted') {
    return {
      apply: async () => void (await pool.call('VM.set_memory_limits', [ref, Math.min(staticMin, value), value, value, value])),
      undo: async () => void (await pool.call('VM.set_memory_limits', [ref, staticMin, staticMax, dynamicMin, dynamicMax])),
    }
  }
  if (value > staticMax) return `a running VM can have at most ${staticMax} bytes (its static maximum); halt it to raise that`
  if (value < staticMin) return `a running VM needs at least ${staticMin} bytes (its static minimum)`
  return {
    apply: async () => void (await pool.call('VM.set_memory_dynamic_range', [ref, value, value])),
    undo: async () => void (await pool.call('VM.set_memory_dynamic_range', [ref, dynamicMin, dynamicMax])),
  }
}

const HA_MODES = ['', 'restart', 'best-effort']

const vmPlanners: Planners = {
  nameLabel: (target, value, current) => text('name_label', 1)(target, value, current),
  nameDescription: (target, value, current) => text('name_description')(target, value, current),
  cpus,
  memory,
  autoPoweron: (target, value, current) => {
    if (typeof value !== 'boolean') return 'must be a boolean'
    return otherConfigEntry(target, 'auto_poweron', value ? 'true' : undefined, current)
  },
  highAvailability: (target, value, current) => {
    if (!isString(value) || !HA_MODES.includes(value)) return `must be one of ${HA_MODES.map((m) => JSON.stringify(m)).join(', ')}`
    return setter('ha_restart_priority')(target, value, current)
  },
  startDelay: (target, value, current) => {
    if (!isInteger(value) || value < 0) return 'must be a non-negative integer'
    return setter('start_delay')(target, value, current)
  },
  // The reference's key, so that both tools show the same notes.
  notes: (target, value, current) => {
    if (!isString(value)) return 'must be a string'
    return otherConfigEntry(target, 'xo:notes', value === '' ? undefined : value, current)
  },
  tags: (target, value, current) => {
    if (!isStringArray(value)) return 'must be an array of strings'
    return setter('tags')(target, [...new Set(value)], current)
  },
}

const vdiPlanners: Planners = {
  name_label: text('name_label', 1),
  name_description: text('name_description'),
  size: ({ pool, ref }, value, current) => {
    if (!isInteger(value) || value < 1) return 'must be a positive integer'
    const size = numberOf(current['virtual_size'])
    if (value < size) return `a disk can only grow: it has ${size} bytes`
    return { apply: async () => void (value > size ? await pool.callAsync('VDI.resize', [ref, value]) : undefined) }
  },
}

const LOCKING_MODES = ['network_default', 'locked', 'unlocked', 'disabled']

const vifPlanners: Planners = {
  lockingMode: (target, value, current) => {
    if (!isString(value) || !LOCKING_MODES.includes(value)) return `must be one of ${LOCKING_MODES.join(', ')}`
    return setter('locking_mode')(target, value, current)
  },
  allowedIpv4Addresses: (target, value, current) => {
    if (!isStringArray(value)) return 'must be an array of IPv4 addresses'
    return setter('ipv4_allowed')(target, [...new Set(value)], current)
  },
  allowedIpv6Addresses: (target, value, current) => {
    if (!isStringArray(value)) return 'must be an array of IPv6 addresses'
    return setter('ipv6_allowed')(target, [...new Set(value)], current)
  },
  // The reference's rate limit: the `ratelimit` QoS algorithm with `kbps`.
  rateLimit: (target, value, current) => {
    if (value !== null && !(isInteger(value) && value >= 1)) return 'must be a positive integer (kB/s) or null'
    return sequence(
      setter('qos_algorithm_type')(target, value === null ? '' : 'ratelimit', current),
      setter('qos_algorithm_params')(target, value === null ? {} : { kbps: String(value) }, current),
    )
  },
  // The reference's flag: other_config `ethtool-tx`.
  txChecksumming: (target, value, current) => {
    if (typeof value !== 'boolean') return 'must be a boolean'
    return otherConfigEntry(target, 'ethtool-tx', String(value), current)
  },
}

const namePlanners: Planners = { name_label: text('name_label', 1), name_description: text('name_description') }

/** Keel's PATCH on XAPI, by type. */
export const plannersByType: Readonly<Record<string, Planners>> = {
  VM: vmPlanners,
  VDI: vdiPlanners,
  VIF: vifPlanners,
  network: namePlanners,
  SR: namePlanners,
  host: namePlanners,
  pool: namePlanners,
}

/**
 * Every field checked against the current record before any is set; then
 * the edits run, those that cannot be taken back last, and if one fails the
 * ones done are taken back, so a PATCH changes all its fields or none.
 */
export async function applyPatch(target: Target, planners: Planners, patch: Readonly<Record<string, unknown>>): Promise<void> {
  const current = await target.pool.call<XapiFields>(`${target.cls}.get_record`, [target.ref])
  const errors: Array<{ path: string; message: string }> = []
  const edits: Edit[] = []
  for (const [field, value] of Object.entries(patch)) {
    const planner = Object.hasOwn(planners, field) ? planners[field] : undefined
    const planned = planner === undefined ? 'is not a field that can be changed' : planner(target, value, current)
    if (typeof planned === 'string') errors.push({ path: `body.${field}`, message: planned })
    else edits.push(planned)
  }
  if (errors.length > 0) throw invalidParameters(errors)
  edits.sort((a, b) => Number(a.undo === undefined) - Number(b.undo === undefined))
  const done: Edit[] = []
  try {
    for (const edit of edits) {
      await edit.apply()
      done.push(edit)
    }
  } catch (error) {
    // The failure that stopped the PATCH is the one reported; a failed undo cannot be answered better.
    for (const edit of done.reverse()) await edit.undo?.().catch(() => undefined)
    throw error
  }
}
