import { decodeXmlRpc, type XmlRpcValue } from '../../xapi/xml-rpc.js'
import { XapiError, type XapiPool, type XapiTaskOptions } from './types.js'

interface TaskEvent {
  readonly ref: string
  readonly operation: string
  readonly snapshot: Readonly<Record<string, unknown>>
}

interface EventBatch {
  readonly token: string
  readonly events: readonly TaskEvent[]
}

/** How long one event.from waits for the task to change, in seconds (a float, as XAPI wants it). */
const WAIT = 30.1

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : [])

/**
 * Follows one XAPI task to its end through `event.from` on that task alone:
 * progress reported (0 to 100), `task.cancel` sent once when the signal
 * aborts, then the outcome: the result decoded from its XML-RPC text (XAPI
 * writes it so over either wire), or the task's failure as a XapiError
 * (TASK_CANCELLED for a cancelled task). The task is left in place; who
 * created it destroys it.
 */
export async function taskOutcome(pool: XapiPool, ref: string, options: XapiTaskOptions = {}): Promise<XmlRpcValue> {
  const { signal, progress } = options
  let cancelled = false
  const cancel = (): void => {
    if (cancelled) return
    cancelled = true
    // A task that already settled, or a transfer XAPI will not cancel, refuses: its outcome says what happened.
    pool.call('task.cancel', [ref]).catch(() => undefined)
  }
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    if (signal?.aborted === true) cancel()
    let token = ''
    for (;;) {
      const batch = await pool.call<EventBatch>('event.from', [[`task/${ref}`], token, WAIT], { timeout: (WAIT + 10) * 1000 })
      token = batch.token
      for (const event of batch.events) {
        if (event.ref !== ref) continue
        if (event.operation === 'del') throw new XapiError('HANDLE_INVALID', ['task', ref])
        const task = event.snapshot
        switch (task['status']) {
          case 'success':
            return typeof task['result'] === 'string' && task['result'] !== '' ? decodeXmlRpc(task['result']) : ''
          case 'failure': {
            const [code = 'INTERNAL_ERROR', ...params] = strings(task['error_info'])
            throw new XapiError(code, params)
          }
          case 'cancelled':
            throw new XapiError('TASK_CANCELLED', [ref])
          default:
            progress?.(Math.min(100, Math.max(0, Number(task['progress']) * 100)))
        }
      }
    }
  } finally {
    signal?.removeEventListener('abort', cancel)
  }
}
