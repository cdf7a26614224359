import { incorrectState } from '../../../errors.js'
import { optionalBoolean } from '../../lab/operations/params.js'
import type { OperationContext } from '../../types.js'
import { listMissingPatches } from '../host-facts.js'
import type { XapiPool } from '../types.js'
import { created, step, type XapiAction, type XapiFields } from './context.js'
import { createVm } from './create-vm.js'
import { rebootHost } from './host.js'
import { addHost } from './pool-join.js'
import { networkRecord, poolNetworkActions } from './pool-network.js'

type Records = Readonly<Record<string, XapiFields>>

/** The pool's live hosts, the master first or last. */
async function liveHosts(pool: XapiPool, master: 'first' | 'last'): Promise<string[]> {
  const pools = await pool.call<Records>('pool.get_all_records', [])
  const masterRef = Object.values(pools)[0]?.['master']
  const hosts = await pool.call<Records>('host.get_all_records', [])
  const live: string[] = []
  for (const [ref, host] of Object.entries(hosts)) {
    const metrics = await pool.call<XapiFields>('host_metrics.get_record', [String(host['metrics'])])
    if (metrics['live'] === true) live.push(ref)
  }
  const others = live.filter((ref) => ref !== masterRef)
  const masters = live.filter((ref) => ref === masterRef)
  return master === 'first' ? [...masters, ...others] : [...others, ...masters]
}

/** The guests that are not halted (control domains, templates and snapshots aside), on `host` or anywhere. */
async function guestsUp(pool: XapiPool, host?: string): Promise<string[]> {
  const vms = await pool.call<Records>('VM.get_all_records', [])
  return Object.entries(vms)
    .filter(([, vm]) => vm['is_control_domain'] !== true && vm['is_a_template'] !== true && vm['power_state'] !== 'Halted')
    .filter(([, vm]) => host === undefined || vm['resident_on'] === host)
    .map(([ref]) => ref)
}

async function hardShutdown(pool: XapiPool, vms: readonly string[], context: OperationContext): Promise<void> {
  for (const vm of vms) await pool.callAsync('VM.hard_shutdown', [vm], { signal: context.signal })
}

/**
 * As the lab does it: each live host's guests powered off, then the host
 * shut down, the master last since it coordinates the others; guests left
 * on hosts already down (suspended ones) go at the end.
 */
const emergencyShutdown: XapiAction = async (_env, { pool }, _params, context) => {
  const hosts = await liveHosts(pool, 'last')
  for (const [i, host] of hosts.entries()) {
    await hardShutdown(pool, await guestsUp(pool, host), context)
    await pool.callAsync('host.disable', [host], { signal: context.signal })
    await pool.callAsync('host.shutdown', [host], { signal: context.signal })
    context.progress((90 * (i + 1)) / hosts.length)
  }
  await hardShutdown(pool, await guestsUp(pool), context)
  return undefined
}

/** Whether one of the VM's disks is on storage only its host reaches: it cannot move off the host. */
async function pinned(pool: XapiPool, vm: XapiFields): Promise<boolean> {
  for (const vbd of Array.isArray(vm['VBDs']) ? vm['VBDs'].map(String) : []) {
    const vdi = String((await pool.call<XapiFields>('VBD.get_record', [vbd]))['VDI'])
    if (vdi === 'OpaqueRef:NULL') continue
    const sr = String(await pool.call<string>('VDI.get_SR', [vdi]))
    if ((await pool.call<boolean>('SR.get_shared', [sr])) !== true) return true
  }
  return false
}

/** The host's running and paused guests that cannot leave it, with their power states. */
async function pinnedGuests(pool: XapiPool, host: string): Promise<Array<{ readonly ref: string; readonly paused: boolean }>> {
  const out: Array<{ ref: string; paused: boolean }> = []
  for (const ref of await pool.call<string[]>('host.get_resident_VMs', [host])) {
    const vm = await pool.call<XapiFields>('VM.get_record', [ref])
    const live = vm['power_state'] === 'Running' || vm['power_state'] === 'Paused'
    if (vm['is_control_domain'] !== true && live && (await pinned(pool, vm))) out.push({ ref, paused: vm['power_state'] === 'Paused' })
  }
  return out
}

/**
 * Each live host in turn, the master first as the reference does: cleared,
 * rebooted, and waited for until it is back and enabled. Guests whose disks
 * are on the host's local storage cannot move: they are shut down before
 * and started again after, as the lab does (the reference's
 * shutdownPinnedVms), paused ones paused. A host whose other guests cannot
 * all move stops the reboot there, enabled again, its pinned guests started
 * again; the hosts rebooted before it stay so.
 */
const rollingReboot: XapiAction = async (_env, { pool }, _params, context) => {
  await rebootInTurn(pool, await liveHosts(pool, 'first'), context)
  return undefined
}

/** Each host cleared, rebooted and back in turn, its pinned guests shut down around the reboot; `from` to 100 of the progress. */
async function rebootInTurn(pool: XapiPool, hosts: readonly string[], context: OperationContext, from = 0): Promise<void> {
  const share = (100 - from) / Math.max(hosts.length, 1)
  for (const [i, host] of hosts.entries()) {
    const stopped = await pinnedGuests(pool, host)
    for (const { ref } of stopped) await pool.callAsync('VM.hard_shutdown', [ref], { signal: context.signal })
    const restart = async (): Promise<void> => {
      for (const { ref, paused } of stopped) await pool.callAsync('VM.start_on', [ref, host, paused, false])
    }
    try {
      await rebootHost(pool, host, { ...context, progress: (percent) => context.progress(from + share * i + (share * percent) / 100) })
    } catch (error) {
      // The reboot's failure is the answer; the guests are started again all the same.
      await restart().catch(() => undefined)
      throw error
    }
    await restart()
  }
}

/**
 * As the lab's rolling update, through XCP-ng's updater plugin as the
 * reference installs updates (`updater.py` `update` on each host, then a
 * rolling reboot): the hosts that lack updates, every one of them running,
 * get them, then are rebooted in turn, the master last. A guest whose disks
 * only its host reaches refuses it unless `shutdownPinnedVms`: then it is
 * shut down and started again around its host's reboot. Hosts lacking
 * nothing are left alone.
 */
const rollingUpdate: XapiAction = async (env, { pool }, params, context) => {
  const { signal } = context
  for (const ref of await pool.call<string[]>('host.get_all', [], { signal })) {
    const host = env.locator.recordOf(pool, ref)
    if (host !== undefined && host['power_state'] !== 'Running') throw incorrectState({ actual: host['power_state'], expected: 'Running', object: host.id, property: 'power_state' })
  }
  const hosts: string[] = []
  for (const ref of await liveHosts(pool, 'last')) {
    const host = env.locator.recordOf(pool, ref)
    if (host !== undefined && (await listMissingPatches(env.locator, host, signal)).length > 0) hosts.push(ref)
  }
  if (optionalBoolean(params, 'shutdownPinnedVms') !== true) {
    for (const host of hosts) {
      const [pinned] = await pinnedGuests(pool, host)
      const vm = pinned === undefined ? undefined : env.locator.recordOf(pool, pinned.ref)
      if (vm !== undefined) throw incorrectState({ actual: vm['power_state'], expected: 'Halted', object: vm.id, property: 'power_state' })
    }
  }
  for (const [i, host] of hosts.entries()) {
    await pool.callAsync('host.call_plugin', [host, 'updater.py', 'update', {}], { signal })
    context.progress((10 * (i + 1)) / hosts.length)
  }
  await rebootInTurn(pool, hosts, context, 10)
  return undefined
}

/** A network of the pool with no PIF, as the reference creates one (XAPI picks its bridge). */
const createInternalNetwork: XapiAction = async (env, { pool }, params, context) => {
  const record = networkRecord(params)
  return created(env, pool, 'network', await pool.callAsync<string>('network.create', [record], step(context)))
}

export const poolActions: Readonly<Record<string, XapiAction>> = {
  ...poolNetworkActions,
  add_host: addHost,
  create_internal_network: createInternalNetwork,
  create_vm: createVm,
  emergency_shutdown: emergencyShutdown,
  rolling_reboot: rollingReboot,
  rolling_update: rollingUpdate,
}

