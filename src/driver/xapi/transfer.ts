import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import type { XmlRpcValue } from '../../xapi/xml-rpc.js'
import { taskOutcome } from './task-outcome.js'
import { isTransportError } from './transport.js'
import { XapiError, type XapiPool } from './types.js'

/** A transfer whose host went silent (http-handlers.ts TransferTimeouts). */
const isTimeout = (error: unknown): boolean => isTransportError(error) && error.timedOut

/** How long a broken transfer's task is given to report why, in ms. */
const SETTLE_WAIT = 5_000

/**
 * A transfer through one of XAPI's HTTP handlers, with a task of its own
 * (`task.create`, named in the query as `task_id`): XAPI reports the
 * transfer's outcome in the task, not in the HTTP status, and cancelling
 * the task stops it. The task is destroyed however the transfer ends.
 */
export class Transfer {
  readonly #pool: XapiPool
  readonly #task: string
  readonly #host: string | undefined
  readonly #controller = new AbortController()
  #response: IncomingMessage | undefined

  private constructor(pool: XapiPool, task: string, host: string | undefined) {
    this.#pool = pool
    this.#task = task
    this.#host = host
  }

  /** `host`: the address of the host the handlers are asked on (srHostAddress), default the master. */
  static async start(pool: XapiPool, label: string, host?: string): Promise<Transfer> {
    return new Transfer(pool, await pool.call<string>('task.create', [label, 'Keel']), host)
  }

  /** GET a handler: the response, its body to be read to the end, then `outcome()`. */
  async get(path: string, query: Readonly<Record<string, string>>): Promise<IncomingMessage> {
    return this.#request({ method: 'GET', path, query: { ...query, task_id: this.#task }, signal: this.#controller.signal })
  }

  /** PUT a body of exactly `length` bytes, then wait for the task's outcome. A host that went silent has its task cancelled: the import stops there, its target as it was. */
  async put(path: string, query: Readonly<Record<string, string>>, body: AsyncIterable<Buffer>, length: number): Promise<XmlRpcValue> {
    try {
      const response = await this.#request({ method: 'PUT', path, query: { ...query, task_id: this.#task }, body: Readable.from(body), length, signal: this.#controller.signal })
      response.resume()
      await finished(response)
    } catch (error) {
      if (isTimeout(error)) await this.#pool.call('task.cancel', [this.#task]).catch(() => undefined)
      throw error
    }
    return this.outcome()
  }

  /** The task's result; its failure as a XapiError. */
  outcome(): Promise<XmlRpcValue> {
    return taskOutcome(this.#pool, this.#task, { signal: this.#controller.signal })
  }

  /**
   * Why a transfer broke: the task's failure when XAPI failed it (a reset
   * connection says less than VDI_IO_ERROR), else `error`. The task settles
   * soon after the connection ends; it is waited for a bounded time. A
   * request no host answered started no transfer: its task has nothing to say.
   */
  async explain(error: unknown): Promise<unknown> {
    // A host that went silent has nothing to say either; its task, cancelled by Keel, would only say so.
    if (this.#response === undefined || isTimeout(error)) return error
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SETTLE_WAIT)
    })
    try {
      await Promise.race([this.outcome(), late])
      return error
    } catch (failure) {
      return failure instanceof XapiError ? failure : error
    } finally {
      clearTimeout(timer)
    }
  }

  /** Stops the transfer (the connection closed, the task cancelled where XAPI allows it) and destroys the task. */
  async stop(): Promise<void> {
    if (!this.#controller.signal.aborted) this.#controller.abort()
    this.#response?.destroy()
    await this.#pool.call('task.cancel', [this.#task]).catch(() => undefined)
    await this.close()
  }

  async close(): Promise<void> {
    await this.#pool.call('task.destroy', [this.#task]).catch(() => undefined)
  }

  /**
   * A refused request answers with the task's failure, which says more than
   * the HTTP status; a host that never answered, with the timeout: its task
   * failed only because Keel left.
   */
  async #request(request: Parameters<XapiPool['request']>[0]): Promise<IncomingMessage> {
    try {
      this.#response = await this.#pool.request(this.#host === undefined ? request : { ...request, host: this.#host })
      return this.#response
    } catch (error) {
      if (isTimeout(error)) throw error
      throw (await this.#failure()) ?? error
    }
  }

  async #failure(): Promise<XapiError | undefined> {
    const task = await this.#pool.call<Readonly<Record<string, unknown>>>('task.get_record', [this.#task]).catch(() => undefined)
    if (task?.['status'] !== 'failure' || !Array.isArray(task['error_info'])) return undefined
    const [code = 'INTERNAL_ERROR', ...params] = task['error_info'].map(String)
    return new XapiError(code, params)
  }
}
