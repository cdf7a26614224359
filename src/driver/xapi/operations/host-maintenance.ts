import { incorrectState, invalidParameters } from '../../../errors.js'
import { requiredString } from '../../lab/operations/params.js'
import type { OperationContext, XoRecord } from '../../types.js'
import type { XapiPool } from '../types.js'
import { isGone, refOf, step, type Env, type Target, type XapiAction, type XapiFields } from './context.js'
import { rebootHost } from './host.js'

/**
 * The host actions beyond power: the toolstack, the NICs, the management
 * interface, the two ways down that take the VMs with the host, and leaving
 * the pool. The host's state and role are checked on the index first, as
 * the lab refuses them; XAPI has the last word.
 */

function requireState(env: Env, object: XoRecord, expected: 'Running' | 'Halted'): XoRecord {
  const host = env.index.getObject(object.id) ?? object
  if (host['power_state'] !== expected) throw incorrectState({ actual: host['power_state'], expected, object: host.id, property: 'power_state' })
  return host
}

/** The master coordinates the pool: it does not leave it. */
function notMaster(env: Env, host: XoRecord): void {
  if (env.index.getObject(String(host['$pool']))?.['master'] === host.id) throw incorrectState({ actual: true, expected: false, object: host.id, property: 'master' })
}

const onRunning =
  (method: string): XapiAction =>
  async (env, { object, pool, ref }, _params, context) => {
    requireState(env, object, 'Running')
    await pool.callAsync(method, [ref], step(context))
    return undefined
  }

/**
 * Nothing is lost with a host that leaves: it may hold no guest and no
 * local SR with disks on it, as the lab refuses it (XAPI refuses the first;
 * the second would lose the disks with the host).
 */
async function requireEmpty(env: Env, { object, pool, ref }: Target, signal: AbortSignal): Promise<void> {
  const held = (what: string): never => {
    const id = env.locator.recordOf(pool, what)?.id ?? what
    throw incorrectState({ actual: object.id, expected: object['$pool'], object: id, property: '$container' })
  }
  for (const vm of await pool.call<string[]>('host.get_resident_VMs', [ref], { signal })) {
    if ((await pool.call<boolean>('VM.get_is_control_domain', [vm], { signal })) !== true) held(vm)
  }
  for (const pbd of await pool.call<string[]>('host.get_PBDs', [ref], { signal })) {
    const sr = await pool.call<string>('PBD.get_SR', [pbd], { signal })
    const record = await pool.call<XapiFields>('SR.get_record', [sr], { signal })
    if (record['shared'] !== true && Array.isArray(record['VDIs']) && record['VDIs'].length > 0) held(sr)
  }
}

const leaving =
  (method: string, state: 'Running' | 'Halted'): XapiAction =>
  async (env, target, _params, context) => {
    notMaster(env, requireState(env, target.object, state))
    await requireEmpty(env, target, context.signal)
    await target.pool.callAsync(method, [target.ref], step(context))
    return undefined
  }

const managementReconfigure: XapiAction = async (env, target, params, context) => {
  requireState(env, target.object, 'Running')
  const pifId = requiredString(params, 'pif')
  const pif = refOf(env, target, pifId, 'PIF', 'body.pif')
  const record = env.index.getObject(pifId)
  if (record?.['$host'] !== target.object.id) throw invalidParameters([{ path: 'body.pif', message: 'is not a PIF of this host' }])
  if (record['attached'] !== true) throw incorrectState({ actual: false, expected: true, object: pifId, property: 'attached' })
  await target.pool.callAsync('host.management_reconfigure', [pif], step(context))
  return undefined
}

/** The host's guests that are running or paused, control domains aside. */
async function liveGuests(pool: XapiPool, host: string, signal: AbortSignal): Promise<string[]> {
  const live: string[] = []
  for (const vm of await pool.call<string[]>('host.get_resident_VMs', [host], { signal })) {
    const record = await pool.call<XapiFields>('VM.get_record', [vm], { signal })
    if (record['is_control_domain'] !== true && (record['power_state'] === 'Running' || record['power_state'] === 'Paused')) live.push(vm)
  }
  return live
}

/** As the lab does it: the guests powered off, then the host, disabled first so that nothing lands on it meanwhile. */
const emergencyShutdown: XapiAction = async (env, { object, pool, ref }, _params, context) => {
  requireState(env, object, 'Running')
  await pool.callAsync('host.disable', [ref], step(context, 0, 5))
  const guests = await liveGuests(pool, ref, context.signal)
  for (const [i, vm] of guests.entries()) {
    await pool.callAsync('VM.hard_shutdown', [vm], { signal: context.signal })
    context.progress(5 + (45 * (i + 1)) / guests.length)
  }
  await pool.callAsync('host.shutdown', [ref], step(context, 50, 100))
  return undefined
}

async function resumeStillSuspended(pool: XapiPool, vms: readonly string[], context: OperationContext): Promise<void> {
  for (const vm of vms) {
    try {
      if ((await pool.call<string>('VM.get_power_state', [vm])) === 'Suspended') await pool.callAsync('VM.resume', [vm, false, true], { signal: context.signal })
    } catch (error) {
      // A VM destroyed meanwhile is left as it is.
      if (!isGone(error)) throw error
    }
  }
}

/**
 * The reference's smart reboot without its evacuation: the running and
 * paused guests suspended, the host rebooted, then the guests still
 * suspended resumed, running (on the host, where their memory image waits).
 */
const smartReboot: XapiAction = async (env, { object, pool, ref }: Target, _params, context) => {
  requireState(env, object, 'Running')
  await pool.callAsync('host.disable', [ref], step(context, 0, 5))
  const guests = await liveGuests(pool, ref, context.signal)
  for (const vm of guests) await pool.callAsync('VM.suspend', [vm], { signal: context.signal })
  context.progress(30)
  await rebootHost(pool, ref, { ...context, progress: (percent) => context.progress(30 + (percent * 60) / 100) })
  await resumeStillSuspended(pool, guests, context)
  return undefined
}

export const hostMaintenanceActions: Readonly<Record<string, XapiAction>> = {
  restart_toolstack: onRunning('host.restart_agent'),
  scan_pifs: onRunning('PIF.scan'),
  management_reconfigure: managementReconfigure,
  emergency_shutdown: emergencyShutdown,
  smart_reboot: smartReboot,
  detach: leaving('pool.eject', 'Running'),
  forget: leaving('host.destroy', 'Halted'),
}
