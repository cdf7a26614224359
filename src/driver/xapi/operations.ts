import { aborted, KeelError, noSuchObject } from '../../errors.js'
import { taggableTypes } from '../../model/operations.js'
import { notDeclared } from '../capabilities.js'
import type { Created, DriverCapabilities, DriverOperations, OperationContext, XoRecord } from '../types.js'
import { translated } from './errors.js'
import type { Env, Params, PoolMerger, Target, XapiAction, XapiIndex } from './operations/context.js'
import { destroyersByType as ownDestroyers, type XapiDestroyer } from './operations/destroy.js'
import { creatorsByType, deviceActions, destroyDevice } from './operations/devices.js'
import { hostActions } from './operations/host.js'
import { hostMaintenanceActions } from './operations/host-maintenance.js'
import { poolActions } from './operations/pool.js'
import { srActions, vdiActions } from './operations/sr.js'
import { destroySr, pbdActions, srLifecycleActions } from './operations/sr-lifecycle.js'
import { destroyTemplate } from './operations/template.js'
import { applyPatch, plannersByType } from './operations/update.js'
import { vmActions } from './operations/vm.js'
import type { XapiLocator } from './types.js'

const actionsByType: Readonly<Record<string, Readonly<Record<string, XapiAction>>>> = {
  VM: vmActions,
  host: { ...hostActions, ...hostMaintenanceActions },
  pool: poolActions,
  SR: { ...srActions, ...srLifecycleActions },
  PBD: pbdActions,
  VDI: vdiActions,
  VBD: deviceActions,
  VIF: deviceActions,
}

const destroyersByType: Readonly<Record<string, XapiDestroyer>> = {
  ...ownDestroyers,
  'VM-template': destroyTemplate,
  SR: destroySr,
  VBD: destroyDevice,
  VIF: destroyDevice,
}

const own = <T>(table: Readonly<Record<string, T>>, key: string): T | undefined => (Object.hasOwn(table, key) ? table[key] : undefined)

/** What XapiOperations can do, read off its tables so that the declaration cannot drift from them. */
export const xapiCapabilities: DriverCapabilities = Object.freeze({
  actions: Object.fromEntries(Object.entries(actionsByType).map(([type, actions]) => [type, Object.keys(actions)])),
  patch: Object.keys(plannersByType),
  destroy: Object.keys(destroyersByType),
  tags: [...taggableTypes],
  create: Object.keys(creatorsByType),
})

/**
 * The driver's operations on XAPI pools: each action runs as `Async.*`
 * messages, as the reference calls them, its progress relayed and its task
 * cancelled when the operation is aborted; XAPI's failures are answered as
 * Keel's (errors.ts). An operation settles once XAPI has committed it; an
 * object it created is answered once the index holds it.
 */
export class XapiOperations implements DriverOperations {
  readonly #env: Env

  constructor(locator: XapiLocator, index: XapiIndex, merger?: PoolMerger) {
    this.#env = { locator, index, ...(merger === undefined ? {} : { merger }) }
  }

  async perform(object: XoRecord, action: string, params: Params, context: OperationContext): Promise<Created | undefined> {
    const run = own(actionsByType, object.type)
    const handler = run === undefined ? undefined : own(run, action)
    if (handler === undefined) throw notDeclared(object, action)
    return this.#run(object, context, (target) => handler(this.#env, target, params, context))
  }

  async update(object: XoRecord, patch: Readonly<Record<string, unknown>>): Promise<void> {
    const planners = own(plannersByType, object.type)
    if (planners === undefined) throw notDeclared(object, 'update')
    await this.#run(object, undefined, (target) => applyPatch(target, planners, patch))
  }

  async destroy(object: XoRecord, context: OperationContext): Promise<void> {
    const destroyer = own(destroyersByType, object.type)
    if (destroyer === undefined) throw notDeclared(object, 'destroy')
    await this.#run(object, context, (target) => destroyer(target, context, this.#env))
  }

  async create(type: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created> {
    const creator = own(creatorsByType, type)
    if (creator === undefined) throw new KeelError('NO_SUCH_OBJECT', `${type} cannot be created here`, { type, operation: 'POST' })
    if (context.signal.aborted) throw aborted()
    return translated({}, () => creator(this.#env, params, context))
  }

  async setTag(object: XoRecord, tag: string, present: boolean): Promise<void> {
    if (!xapiCapabilities.tags.includes(object.type)) throw notDeclared(object, 'tags')
    await this.#run(object, undefined, async ({ pool, ref, cls }) => {
      await pool.call(`${cls}.${present ? 'add_tags' : 'remove_tags'}`, [ref, tag])
    })
  }

  /** Locates the object, then runs the exchange with XAPI's failures translated. */
  async #run<T>(object: XoRecord, context: OperationContext | undefined, run: (target: Target) => Promise<T>): Promise<T> {
    if (context?.signal.aborted === true) throw aborted()
    return translated({ object }, async () => {
      const location = this.#env.locator.locate(object)
      if (location === undefined) throw noSuchObject(object.id, object.type)
      return run({ object, ...location })
    })
  }
}
