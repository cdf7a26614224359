import { invalidParameters } from '../../../errors.js'
import { INSTALLATION_MARK } from '../../../installation.js'
import { optionalString, optionalStringMap, requiredString } from '../../lab/operations/params.js'
import type { OperationContext } from '../../types.js'
import { created, refOf, step, type Target, type XapiAction } from './context.js'
import { requireDisksReachable } from './sr-reach.js'

/** A message taking the VM alone. */
const plain =
  (message: string): XapiAction =>
  async (_env, { pool, ref }, _params, context) => {
    await pool.callAsync(`VM.${message}`, [ref], step(context))
    return undefined
  }

/**
 * Keel's mark on a snapshot it takes: XAPI copies the VM's other_config to
 * the snapshot, installation mark included, so the mark is taken off unless
 * the taker sets it, then the taker's entries are written (the driver
 * contract, src/driver/types.ts).
 */
async function markSnapshot(target: Target, snapshot: string, entries: Readonly<Record<string, string>>, context: OperationContext): Promise<void> {
  const { pool } = target
  const inherited = await pool.call<Record<string, string>>('VM.get_other_config', [snapshot])
  const replaced = [...Object.keys(entries), ...(INSTALLATION_MARK in inherited ? [INSTALLATION_MARK] : [])]
  for (const key of new Set(replaced)) if (key in inherited) await pool.call('VM.remove_from_other_config', [snapshot, key], { signal: context.signal })
  for (const [key, value] of Object.entries(entries)) await pool.call('VM.add_to_other_config', [snapshot, key, value], { signal: context.signal })
}

const snapshot: XapiAction = async (env, target, params, context) => {
  const { pool, ref, object } = target
  const name = optionalString(params, 'name_label') ?? String(object['name_label'])
  const entries = optionalStringMap(params, 'other_config') ?? {}
  const snapshotRef = await pool.callAsync<string>('VM.snapshot', [ref, name], step(context, 0, 95))
  await markSnapshot(target, snapshotRef, entries, context)
  return created(env, pool, 'VM', snapshotRef)
}

const clone: XapiAction = async (env, { pool, ref, object }, params, context) => {
  const name = optionalString(params, 'name_label') ?? `${String(object['name_label'])} (clone)`
  return created(env, pool, 'VM', await pool.callAsync<string>('VM.clone', [ref, name], step(context)))
}

const start: XapiAction = async (env, target, params, context) => {
  const hostId = optionalString(params, 'hostId')
  const { pool, ref } = target
  // start_paused and force false, as the reference starts a VM.
  if (hostId === undefined) await pool.callAsync('VM.start', [ref, false, false], step(context))
  else {
    const host = refOf(env, target, hostId, 'host', 'body.hostId')
    requireDisksReachable(env, target.object.id, hostId)
    await pool.callAsync('VM.start_on', [ref, host, false, false], step(context))
  }
  return undefined
}

/**
 * As the reference reverts: VM.revert, then a VM snapshotted while running
 * is started again (resumed when the revert left it suspended); a failure
 * to restart is no failure of the revert, which is done.
 */
const revertSnapshot: XapiAction = async (env, target, params, context) => {
  const snapshotId = requiredString(params, 'snapshotId')
  const { pool, ref, object } = target
  const snapshotRef = refOf(env, target, snapshotId, 'VM-snapshot', 'body.snapshotId')
  const snapshot = await pool.call<Readonly<Record<string, unknown>>>('VM.get_record', [snapshotRef])
  if (snapshot['snapshot_of'] !== ref) {
    throw invalidParameters([{ path: 'body.snapshotId', message: `${snapshotId} is not a snapshot of VM ${object.id}` }])
  }
  await pool.callAsync('VM.revert', [snapshotRef], step(context, 0, 80))
  const info = snapshot['snapshot_info']
  if (typeof info !== 'object' || info === null || (info as Record<string, unknown>)['power-state-at-snapshot'] !== 'Running') return undefined
  const state = await pool.call<string>('VM.get_power_state', [ref])
  const restart = state === 'Halted' ? pool.callAsync('VM.start', [ref, false, false]) : state === 'Suspended' ? pool.callAsync('VM.resume', [ref, false, true]) : undefined
  await restart?.catch(() => undefined)
  return undefined
}

const migrate: XapiAction = async (env, target, params, context) => {
  const host = refOf(env, target, requiredString(params, 'hostId'), 'host', 'body.hostId')
  await target.pool.callAsync('VM.pool_migrate', [target.ref, host, {}], step(context))
  return undefined
}

export const vmActions: Readonly<Record<string, XapiAction>> = {
  start,
  clean_shutdown: plain('clean_shutdown'),
  hard_shutdown: plain('hard_shutdown'),
  clean_reboot: plain('clean_reboot'),
  hard_reboot: plain('hard_reboot'),
  pause: plain('pause'),
  unpause: plain('unpause'),
  suspend: plain('suspend'),
  // Not paused, and forced, as the reference resumes a VM.
  resume: async (_env, { pool, ref }, _params, context) => {
    await pool.callAsync('VM.resume', [ref, false, true], step(context))
    return undefined
  },
  snapshot,
  clone,
  revert_snapshot: revertSnapshot,
  migrate,
}

