import type { OperationContext } from '../../types.js'
import { step, type Target, type XapiAction } from './context.js'

const plain =
  (message: string): XapiAction =>
  async (_env, { pool, ref }, _params, context) => {
    await pool.callAsync(`host.${message}`, [ref], step(context))
    return undefined
  }

/**
 * As the reference clears a host before rebooting or shutting it down: no
 * new VM may start on it, then its guests move to the other hosts; a guest
 * no host takes fails the operation, and the host is enabled again.
 */
async function clear({ pool, ref }: Target, context: OperationContext): Promise<void> {
  await pool.callAsync('host.disable', [ref], step(context, 0, 5))
  try {
    await pool.callAsync('host.evacuate', [ref], step(context, 5, 50))
  } catch (error) {
    await pool.callAsync('host.enable', [ref])
    throw error
  }
}

const cleared =
  (message: string): XapiAction =>
  async (_env, target, _params, context) => {
    await clear(target, context)
    await target.pool.callAsync(`host.${message}`, [target.ref], step(context, 50, 100))
    return undefined
  }

export const hostActions: Readonly<Record<string, XapiAction>> = {
  disable: plain('disable'),
  enable: plain('enable'),
  clean_reboot: cleared('reboot'),
  clean_shutdown: cleared('shutdown'),
  start: plain('power_on'),
}
