import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { WaitOptions, XoRecord } from '../types.js'
import type { MemberReader } from './result-members.js'

/**
 * The seams of the XAPI driver: a pool connection (calls, tasks, HTTP
 * handlers), where an XO record lives in XAPI, and what the `servers`
 * collection asks of the driver. Kept apart so that the connection, the
 * operations and the servers registry can change without one another.
 */

/** A failure as XAPI describes it (its ErrorDescription: code, then parameters). */
export class XapiError extends Error {
  constructor(
    readonly code: string,
    readonly params: readonly string[] = [],
  ) {
    super(params.length === 0 ? code : `${code}(${params.join(', ')})`)
    this.name = 'XapiError'
  }
}

/** What to call instead, once, when the host is older than the call (MESSAGE_PARAMETER_COUNT_MISMATCH, MESSAGE_METHOD_UNKNOWN). */
export interface XapiFallback {
  /** default: the same method */
  readonly method?: string
  readonly params: readonly unknown[]
}

export interface XapiCallOptions {
  readonly signal?: AbortSignal
  /** ms before the call fails with a timeout (default: the connection's) */
  readonly timeout?: number
  readonly fallback?: XapiFallback
  /** an object result read member by member, each as this keeps it: a full fetch keeps what the mapping reads */
  readonly member?: MemberReader
}

export interface XapiTaskOptions {
  /** aborting it calls `task.cancel` on the task */
  readonly signal?: AbortSignal
  /** the task's progress, 0 to 100 */
  readonly progress?: (percent: number) => void
  /** the method (without `Async.`) and parameters for an older host */
  readonly fallback?: XapiFallback
}

export interface XapiHttpRequest {
  readonly method: 'GET' | 'PUT'
  /** a handler of the host: `/export_raw_vdi`, `/import_raw_vdi`, `/export`, `/import` */
  readonly path: string
  /** `session_id` is added by the connection */
  readonly query: Readonly<Record<string, string>>
  /** the address of the host to send it to (the host of a local SR, or the host a handler answers about: `/rrd_updates`); default: the master */
  readonly host?: string
  readonly body?: Readable
  /** the body's exact length, sent as Content-Length: XAPI takes no chunked upload */
  readonly length?: number
  readonly signal?: AbortSignal
}

/** One pool, logged in: sessions renewed, HOST_IS_SLAVE followed, failures as XapiError. */
export interface XapiPool {
  /** the pool's UUID: `$pool` of its objects */
  readonly poolId: string
  call<T = unknown>(method: string, params: readonly unknown[], options?: XapiCallOptions): Promise<T>
  /**
   * `Async.<method>`, then the task followed to its end: progress reported,
   * the result read from its XML-RPC text, the task destroyed once settled.
   */
  callAsync<T = unknown>(method: string, params: readonly unknown[], options?: XapiTaskOptions): Promise<T>
  /** a request to an HTTP handler of `host` (default: the master), redirects followed until a body starts; a status other than 2xx rejects */
  request(request: XapiHttpRequest): Promise<IncomingMessage>
  /** resolves once every change committed on the pool before the call is in the index (`event.inject`) */
  settled(options?: WaitOptions): Promise<void>
}

export interface XapiLocation {
  readonly pool: XapiPool
  readonly ref: string
  /** the XAPI class: `VM` for VMs, snapshots and templates, `VDI` for VDIs and their snapshots, ... */
  readonly cls: string
}

/** Where an XO record lives in XAPI, as the index knows it. */
export interface XapiLocator {
  /** undefined when the object is in no connected pool */
  locate(record: XoRecord): XapiLocation | undefined
  /** the XO record of a ref of `pool`, once the index holds it */
  recordOf(pool: XapiPool, ref: string): XoRecord | undefined
}

/** What a `servers` entry asks the driver to connect. */
export interface PoolConnectionSettings {
  /** `host[:port]`, or a URL (`https://host:port`, `http://` only when allowed in tests) */
  readonly host: string
  readonly username: string
  readonly password: string
  /** accept any certificate (the reference's name) */
  readonly allowUnauthorized: boolean
  /** the SHA-256 fingerprint of the certificate to accept, pinned at first connect */
  readonly fingerprint?: string
  readonly readOnly: boolean
}

/** A pool connected for a `servers` entry, its objects in the index. */
export interface ConnectedPool {
  readonly poolId: string
  readonly poolNameLabel: string
  /** the master host's id */
  readonly master: string
  /** SHA-256 fingerprint of the certificate the pool presented (colon-separated hex), undefined over plain HTTP */
  readonly fingerprint: string | undefined
  /** settles when the connection is lost for good (failover exhausted), with the reason */
  readonly lost: Promise<Error>
  /** settles when the pool joined another (add_host), with that pool's id: its connection has ended */
  readonly merged?: Promise<string>
  /** logs out; the pool's objects leave the index after the grace delay */
  disconnect(): Promise<void>
}

export interface PoolConnector {
  /**
   * Logs in, fetches every object and follows the event stream; resolves
   * once the pool's objects are in the index. Rejects with XapiError
   * (SESSION_AUTHENTICATION_FAILED, ...) or a network error; POOL_ALREADY_CONNECTED
   * as a XapiError when the pool is already connected through another entry.
   */
  connect(settings: PoolConnectionSettings, signal: AbortSignal): Promise<ConnectedPool>
}
