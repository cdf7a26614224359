import { decodeXmlRpc, XmlRpcDouble, type XmlRpcValue } from '../../xapi/xml-rpc.js'
import { XapiError } from './types.js'

/** A task record as event.from or task.get_record gives it over JSON-RPC. */
export type TaskRecord = Readonly<Record<string, unknown>>

interface Follower {
  readonly progress: ((percent: number) => void) | undefined
  readonly resolve: (record: TaskRecord) => void
  readonly reject: (error: unknown) => void
}

const SETTLED = new Set(['success', 'failure', 'cancelled'])

/** A plain JavaScript value of an XML-RPC one (doubles as numbers, datetimes as they are). */
function plain(value: XmlRpcValue): unknown {
  if (value instanceof XmlRpcDouble) return value.value
  if (Array.isArray(value)) return value.map(plain)
  if (typeof value === 'object' && !(value instanceof Date)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)]))
  return value
}

/** A settled task's outcome: its result parsed from XML-RPC text (XAPI writes it so even over JSON-RPC), or its failure. */
export function taskOutcome(ref: string, record: TaskRecord): unknown {
  const status = record['status']
  if (status === 'success') {
    const result = typeof record['result'] === 'string' ? record['result'] : ''
    return result === '' ? undefined : plain(decodeXmlRpc(result))
  }
  if (status === 'cancelled') throw new XapiError('TASK_CANCELLED', [ref])
  const info = Array.isArray(record['error_info']) ? record['error_info'].map(String) : []
  const [code = 'INTERNAL_ERROR', ...params] = info
  throw new XapiError(code, params)
}

/**
 * The tasks being followed, fed by the event loop (class `task`): a
 * follower learns each progress and settles when its task leaves
 * `pending`/`cancelling`; a task deleted before that is a failure.
 */
export class TaskFollowers {
  readonly #followers = new Map<string, Follower>()

  follow(ref: string, progress?: (percent: number) => void): Promise<TaskRecord> {
    return new Promise((resolve, reject) => this.#followers.set(ref, { progress, resolve, reject }))
  }

  forget(ref: string): void {
    this.#followers.delete(ref)
  }

  /** A task's latest record; undefined when it was deleted. */
  changed(ref: string, record: TaskRecord | undefined): void {
    const follower = this.#followers.get(ref)
    if (follower === undefined) return
    if (record === undefined) {
      this.#followers.delete(ref)
      follower.reject(new XapiError('HANDLE_INVALID', ['task', ref]))
      return
    }
    const progress = record['progress']
    if (typeof progress === 'number') follower.progress?.(Math.round(progress * 100))
    if (typeof record['status'] === 'string' && SETTLED.has(record['status'])) {
      this.#followers.delete(ref)
      follower.resolve(record)
    }
  }

  /**
   * Reads every followed task again through `read` (`task.get_record`). After
   * a resync (EVENTS_LOST, a new session) a task that settled while the
   * events were lost has no event left to settle its follower, whose caller
   * would otherwise wait for ever. A task XAPI no longer knows fails as a
   * deleted one; a read that fails otherwise leaves the follower to the events.
   */
  async reread(read: (ref: string) => Promise<TaskRecord>): Promise<void> {
    await Promise.all(
      [...this.#followers.keys()].map(async (ref) => {
        let record: TaskRecord | undefined
        try {
          record = await read(ref)
        } catch (error) {
          if (!(error instanceof XapiError && error.code === 'HANDLE_INVALID')) return
        }
        this.changed(ref, record)
      }),
    )
  }

  /** Fails every follower (the connection is gone). */
  close(error: Error): void {
    for (const follower of this.#followers.values()) follower.reject(error)
    this.#followers.clear()
  }
}
