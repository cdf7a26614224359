import type { OperationContext } from '../../types.js'
import type { XapiPool } from '../types.js'
import { step, type XapiAction } from './context.js'

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
async function clear(pool: XapiPool, ref: string, context: OperationContext): Promise<void> {
  await pool.callAsync('host.disable', [ref], step(context, 0, 5))
  try {
    await pool.callAsync('host.evacuate', [ref], step(context, 5, 50))
  } catch (error) {
    await pool.callAsync('host.enable', [ref])
    throw error
  }
}

interface HostBatch {
  readonly token: string
  readonly events: ReadonlyArray<{ readonly ref: string; readonly snapshot: Readonly<Record<string, unknown>> }>
}

/** Waits until the host is back: XAPI enables a host again once it has booted. */
async function untilEnabled(pool: XapiPool, ref: string, signal: AbortSignal): Promise<void> {
  let token = ''
  for (;;) {
    const batch = await pool.call<HostBatch>('event.from', [[`host/${ref}`], token, 30.1], { signal, timeout: 40_000 })
    token = batch.token
    if (batch.events.some((event) => event.ref === ref && event.snapshot['enabled'] === true)) return
  }
}

/** Cleared, rebooted, and back. */
export async function rebootHost(pool: XapiPool, ref: string, context: OperationContext): Promise<void> {
  await clear(pool, ref, context)
  await pool.callAsync('host.reboot', [ref], step(context, 50, 95))
  await untilEnabled(pool, ref, context.signal)
  context.progress(100)
}

export const hostActions: Readonly<Record<string, XapiAction>> = {
  disable: plain('disable'),
  enable: plain('enable'),
  clean_reboot: async (_env, { pool, ref }, _params, context) => {
    await rebootHost(pool, ref, context)
    return undefined
  },
  clean_shutdown: async (_env, { pool, ref }, _params, context) => {
    await clear(pool, ref, context)
    await pool.callAsync('host.shutdown', [ref], step(context, 50, 100))
    return undefined
  },
  start: plain('power_on'),
}
