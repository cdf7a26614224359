import { incorrectState, invalidParameters, type KeelError } from '../../../errors.js'
import { requiredString } from '../../lab/operations/params.js'
import type { XoRecord } from '../../types.js'
import { XapiError } from '../types.js'
import { created, refOf, step, type Env, type XapiAction, type XapiFields } from './context.js'
import { requireReachable } from './sr-reach.js'

/** The lab refuses an ISO library's maintenance the same way. */
function notIso(sr: XoRecord | undefined): void {
  if (sr?.['content_type'] === 'iso') throw incorrectState({ actual: 'iso', expected: 'user', object: sr.id, property: 'content_type' })
}

/**
 * As the reference reclaims an SR's space: the `trim` plugin of a host
 * that has the SR plugged, which answers "True" once done, or a
 * description of what failed.
 */
const reclaimSpace: XapiAction = async (env, { object, pool, ref }, _params, context) => {
  notIso(env.index.getObject(object.id) ?? object)
  const sr = await pool.call<XapiFields>('SR.get_record', [ref], { signal: context.signal })
  const pbds = Array.isArray(sr['PBDs']) ? sr['PBDs'].map(String) : []
  let host: string | undefined
  for (const pbd of pbds) {
    const record = await pool.call<XapiFields>('PBD.get_record', [pbd], { signal: context.signal })
    if (record['currently_attached'] === true) host = String(record['host'])
  }
  if (host === undefined) throw incorrectState({ actual: false, expected: true, object: object.id, property: 'attached' })
  const result = await pool.callAsync<string>('host.call_plugin', [host, 'trim', 'do_trim', { sr_uuid: String(sr['uuid']) }], step(context))
  // The plugin answers its failure as text, not as a XAPI failure: made one, answered as any other.
  if (result !== 'True') throw new XapiError('TRIM_FAILED', [result])
  return undefined
}

export const srActions: Readonly<Record<string, XapiAction>> = {
  scan: async (_env, { pool, ref }, _params, context) => {
    await pool.callAsync('SR.scan', [ref], step(context))
    return undefined
  },
  reclaim_space: reclaimSpace,
}

/** A disk moved to another SR of its pool, as VDI.pool_migrate moves it: the copy is a new VDI, which the answer names. */
const migrateVdi: XapiAction = async (env: Env, target, params, context) => {
  const srId = requiredString(params, 'srId')
  const problem = (message: string): KeelError => invalidParameters([{ path: 'body.srId', message }])
  const sr = refOf(env, target, srId, 'SR', 'body.srId')
  const vdi = env.index.getObject(target.object.id) ?? target.object
  notIso(env.index.getObject(String(vdi['$SR'])))
  if (vdi['$SR'] === srId) throw problem(`the disk is already on SR ${srId}`)
  if (env.index.getObject(srId)?.['content_type'] === 'iso') throw problem(`SR ${srId} is an ISO library`)
  requireReachable(env, String(vdi['$SR']), undefined)
  requireReachable(env, srId, undefined)
  const copy = await target.pool.callAsync<string>('VDI.pool_migrate', [target.ref, sr, {}], step(context))
  return created(env, target.pool, 'VDI', copy)
}

export const vdiActions: Readonly<Record<string, XapiAction>> = { migrate: migrateVdi }
