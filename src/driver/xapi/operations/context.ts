import { invalidParameters, noSuchObject } from '../../../errors.js'
import type { Created, OperationContext, WaitForOptions, XoRecord } from '../../types.js'
import type { Params } from '../../lab/operations/params.js'
import { XapiError, type XapiLocator, type XapiPool, type XapiTaskOptions } from '../types.js'

/** What the operations read of the driver's index. */
export interface XapiIndex {
  getObject(id: string): XoRecord | undefined
  waitFor(id: string, options?: WaitForOptions): Promise<XoRecord>
}

/** What add_host asks of the driver beyond the object located. */
export interface PoolMerger {
  /** the address and credentials of the pool's own connection: what a host joining it is given */
  joinCredentials(poolId: string): JoinCredentials | undefined
  /** runs `join` on the joiner's connection, then ends that connection; resolves once the host is in the target pool's index */
  merge(joinerPoolId: string, targetPoolId: string, hostId: string, join: (joiner: XapiPool) => Promise<void>): Promise<void>
}

export interface JoinCredentials {
  /** the master's address as pool.join takes it: a host name, with `:port` when not XAPI's */
  readonly address: string
  readonly username: string
  readonly password: string
}

export interface Env {
  readonly locator: XapiLocator
  readonly index: XapiIndex
  /** the driver's pools as a whole, for add_host; absent where the operations run on one pool alone */
  readonly merger?: PoolMerger
}

/** A XAPI record as read with get_record: fields by name, ints as numbers or strings. */
export type XapiFields = Readonly<Record<string, unknown>>

/** The object acted on, located in its pool. */
export interface Target {
  readonly object: XoRecord
  readonly pool: XapiPool
  readonly ref: string
  readonly cls: string
}

export type { Params } from '../../lab/operations/params.js'

export type XapiAction = (env: Env, target: Target, params: Params, context: OperationContext) => Promise<Created | undefined>

/** Makes a new object of a type (`POST /rest/v0/<type>s`) on the pool the params name. */
export type XapiCreator = (env: Env, params: Params, context: OperationContext) => Promise<Created>

/** The task options of one step of an operation: its progress mapped onto [from, to] of the whole. */
export const step = (context: OperationContext, from = 0, to = 100): XapiTaskOptions => ({
  signal: context.signal,
  progress: (percent) => context.progress(from + ((to - from) * percent) / 100),
})

/** The ref of an object a parameter names, in the target's pool (the lab refuses an object of another pool the same way). */
export function refOf(env: Env, target: Target, id: string, type: string, path: string): string {
  const record = env.index.getObject(id)
  const location = record === undefined ? undefined : env.locator.locate(record)
  if (record === undefined || location === undefined) throw noSuchObject(id, type)
  if (location.pool.poolId !== target.pool.poolId) throw invalidParameters([{ path, message: `${id} is not in the pool of ${target.object.id}` }])
  return location.ref
}

/** A created object, answered once the index holds it (as `type`, when given: a template made into a VM changes type). */
export async function created(env: Env, pool: XapiPool, cls: string, ref: string, type?: string): Promise<Created> {
  const uuid = await pool.call<string>(`${cls}.get_uuid`, [ref])
  const record = await env.index.waitFor(uuid, type === undefined ? {} : { until: (candidate) => candidate.type === type })
  return { id: record.id, type: record.type }
}

export const isGone = (error: unknown): boolean => error instanceof XapiError && (error.code === 'HANDLE_INVALID' || error.code === 'UUID_INVALID')
