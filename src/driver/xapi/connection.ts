import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { DEFAULT_INDEX_WAIT } from '../index-waits.js'
import type { WaitOptions } from '../types.js'
import { onHost } from './address.js'
import { TokenBarrier } from './barrier.js'
import { handlerRequest, openTunnel, type TransferTimeouts } from './http-handlers.js'
import { Limiter } from './limiter.js'
import type { Rpc, XapiRecorder } from './recorder.js'
import { TaskFollowers, taskOutcome, type TaskRecord } from './tasks.js'
import { poolAgent, type PoolAgent, type TlsTrust } from './tls.js'
import { isTransportError, jsonRpc, XapiTransportError, type RpcTarget } from './transport.js'
import { XapiError, type XapiCallOptions, type XapiHttpRequest, type XapiPool, type XapiTaskOptions } from './types.js'

export interface ConnectionSettings {
  /** the address given: any host of the pool (HOST_IS_SLAVE leads to the master) */
  readonly origin: URL
  readonly username: string
  readonly password: string
  readonly trust: TlsTrust
  /** ms for a call without its own timeout */
  readonly callTimeout?: number
  /** ms each host gets to answer a probe for the master */
  readonly probeTimeout?: number
  /** how long the host of a transfer (an HTTP or CONNECT handler) may stay silent */
  readonly transferTimeouts?: TransferTimeouts
  /** calls in flight at most (the event loop's long poll aside) */
  readonly concurrency?: number
  readonly log?: Logger
  /** records every call of the connection; closed with it */
  readonly recorder?: XapiRecorder
}

/** Sent as the originator: XAPI counts and evicts sessions per originator. */
export const ORIGINATOR = 'keel'
const SKEW = new Set(['MESSAGE_PARAMETER_COUNT_MISMATCH', 'MESSAGE_METHOD_UNKNOWN'])
const MAX_MASTER_HOPS = 3
/** A minute for the host to answer, as for a call; five without a byte moving, as `[http] idleTimeout` gives a REST client. */
export const DEFAULT_TRANSFER_TIMEOUTS: TransferTimeouts = { response: 60_000, idle: 5 * 60_000 }
/** ms between two logins of a probe whose host refused the last one */
const PROBE_RETRY = 500

interface Attempt {
  renewed: boolean
  followed: boolean
  failedOver: boolean
  /** a read (the event loop's poll): sent again after a timeout, since running it twice changes nothing */
  idempotent?: boolean
}

/**
 * One pool, logged in on its master: sessions renewed once on
 * SESSION_INVALID, HOST_IS_SLAVE followed, every known member probed when
 * the master stops answering (a transport failure; never a XAPI error), one
 * fallback call on version skew. The event loop of the index feeds its
 * task followers and its barrier.
 */
export class XapiConnection implements XapiPool {
  readonly #settings: ConnectionSettings
  readonly #agent: PoolAgent
  readonly #limiter: Limiter
  readonly #rpc: Rpc
  readonly tasks = new TaskFollowers()
  readonly barrier = new TokenBarrier()
  #origin: URL
  #session: Promise<string> | undefined
  /** the session #session resolved to, once it has */
  #current: string | undefined
  #failover: Promise<void> | undefined
  #members: readonly string[] = []
  /** connections through CONNECT handlers: they end with the connection */
  readonly #tunnels = new Set<Duplex>()
  #poolId = ''
  #poolRef = ''
  #closed = false
  /** counts the sessions opened: a new session means events may have been missed */
  sessionGeneration = 0

  constructor(settings: ConnectionSettings) {
    this.#settings = settings
    this.#origin = settings.origin
    this.#agent = poolAgent(settings.origin.protocol === 'http:' ? 'http:' : 'https:', settings.trust, settings.concurrency ?? 16)
    this.#limiter = new Limiter(settings.concurrency ?? 16)
    this.#rpc = settings.recorder?.wrap(jsonRpc) ?? jsonRpc
  }

  get poolId(): string {
    return this.#poolId
  }

  get poolRef(): string {
    return this.#poolRef
  }

  /** the master this connection is logged in on (HOST_IS_SLAVE followed, failovers taken) */
  get master(): URL {
    return this.#origin
  }

  get fingerprint(): string | undefined {
    return this.#agent.fingerprint()
  }

  /** Logs in (following HOST_IS_SLAVE) and learns the pool and its members. */
  async open(): Promise<void> {
    await this.#sessionRef()
    const pools = await this.call<Record<string, { uuid: string }>>('pool.get_all_records', [])
    const [entry] = Object.entries(pools)
    if (entry === undefined) throw new XapiError('HANDLE_INVALID', ['pool'])
    ;[this.#poolRef, { uuid: this.#poolId }] = entry
    const hosts = await this.call<Record<string, { address: string }>>('host.get_all_records', [])
    this.members = Object.values(hosts).map((host) => host.address)
  }

  /** The addresses probed when the master stops answering: replaced, not merged, so that an ejected host is not probed. */
  set members(addresses: readonly string[]) {
    this.#members = addresses.filter((address) => address !== '')
  }

  call<T = unknown>(method: string, params: readonly unknown[], options: XapiCallOptions = {}): Promise<T> {
    return this.#limiter.run(() => this.#call<T>(method, params, options, { renewed: false, followed: false, failedOver: false }))
  }

  /** A call outside the concurrency cap: the event loop's long poll must not hold a slot. */
  poll<T = unknown>(method: string, params: readonly unknown[], options: XapiCallOptions): Promise<T> {
    return this.#call<T>(method, params, options, { renewed: false, followed: false, failedOver: false, idempotent: true })
  }

  async #call<T>(method: string, params: readonly unknown[], options: XapiCallOptions, attempt: Attempt): Promise<T> {
    if (this.#closed) throw new XapiTransportError('the connection is closed')
    const session = await this.#sessionRef()
    try {
      return (await this.#rpc(this.#target(), method, [session, ...params], { timeout: options.timeout ?? this.#callTimeout, signal: options.signal, member: options.member })) as T
    } catch (error) {
      if (error instanceof XapiError) {
        if (error.code === 'SESSION_INVALID' && !attempt.renewed) {
          this.#dropSession(session)
          return this.#call(method, params, options, { ...attempt, renewed: true })
        }
        if (error.code === 'HOST_IS_SLAVE' && !attempt.followed && error.params[0] !== undefined) {
          this.#origin = onHost(this.#origin, error.params[0])
          this.#dropSession(session)
          return this.#call(method, params, options, { ...attempt, followed: true })
        }
        const { fallback } = options
        if (SKEW.has(error.code) && fallback !== undefined) {
          const { fallback: _, ...rest } = options
          return this.#call(fallback.method ?? method, fallback.params, rest, attempt)
        }
        throw error
      }
      if (isTransportError(error) && options.signal?.aborted !== true && !attempt.failedOver && !this.#closed) {
        const master = this.#origin.host
        await this.#failOver(error)
        // A call the same master took and did not answer in time may have run: it is not sent twice.
        if (error.timedOut && this.#origin.host === master && attempt.idempotent !== true) throw error
        return this.#call(method, params, options, { ...attempt, failedOver: true })
      }
      throw error
    }
  }

  async callAsync<T = unknown>(method: string, params: readonly unknown[], options: XapiTaskOptions = {}): Promise<T> {
    const { signal, progress, fallback } = options
    // Aborted before it began: nothing to cancel, and it ends as a cancelled task would.
    if (signal?.aborted === true) throw new XapiError('TASK_CANCELLED', [])
    const task = await this.call<string>(`Async.${method}`, params, fallback === undefined ? {} : { fallback: { method: `Async.${fallback.method ?? method}`, params: fallback.params } })
    const followed = this.tasks.follow(task, progress)
    // Failed by a close while the record below is asked for, it is awaited only after: not an unhandled rejection.
    followed.catch(() => undefined)
    const cancel = (): void => void this.call('task.cancel', [task]).catch(() => undefined)
    signal?.addEventListener('abort', cancel, { once: true })
    try {
      // The task may have settled before it was followed: its record now settles the follower as an event would.
      this.tasks.changed(task, await this.call<TaskRecord>('task.get_record', [task]))
      return taskOutcome(task, await followed) as T
    } finally {
      signal?.removeEventListener('abort', cancel)
      this.tasks.forget(task)
      // A task XAPI will not destroy (already gone, still running after a refused cancel) is XAPI's to prune.
      await this.call('task.destroy', [task]).catch(() => undefined)
    }
  }

  async request(request: XapiHttpRequest): Promise<IncomingMessage> {
    const session = await this.#sessionRef()
    const origin = request.host === undefined || request.host === '' ? this.#origin : onHost(this.#origin, request.host)
    const send = (): Promise<IncomingMessage> => handlerRequest(origin, this.#agent.agent, session, request, this.#transferTimeouts)
    return this.#settings.recorder === undefined ? send() : this.#settings.recorder.handler(request.method, request.path, request.query, send)
  }

  /**
   * A raw connection through the CONNECT handler at `location` (a console's:
   * `https://<host>/console?ref=...`) with the pool's session, on the host the
   * location names, with the scheme, port and TLS trust of the pool's own
   * connection; closed when the pool's connection closes or is lost.
   */
  async tunnel(location: string): Promise<Duplex> {
    const session = await this.#sessionRef()
    const named = new URL(location)
    const url = onHost(this.#origin, named.hostname)
    url.pathname = named.pathname
    url.search = named.search
    url.searchParams.set('session_id', session)
    const socket = await openTunnel(url, this.#agent.agent, this.#transferTimeouts.response)
    if (this.#closed) {
      socket.destroy()
      throw new XapiTransportError('the connection is closed')
    }
    this.#tunnels.add(socket)
    socket.once('close', () => this.#tunnels.delete(socket))
    return socket
  }

  async settled(options: WaitOptions = {}): Promise<void> {
    const token = await this.call<string>('event.inject', ['pool', this.#poolRef])
    await this.barrier.wait(token, options.timeout ?? DEFAULT_INDEX_WAIT)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    const session = this.#session
    const closed = new XapiTransportError('the connection is closed')
    this.tasks.close(closed)
    this.barrier.close(closed)
    if (session !== undefined) {
      const ref = await session.catch(() => undefined)
      if (ref !== undefined) await this.#rpc(this.#target(), 'session.logout', [ref], { timeout: 5_000 }).catch(() => undefined)
    }
    this.#closed = true
    for (const socket of this.#tunnels) socket.destroy()
    this.#agent.agent.destroy()
    await this.#settings.recorder?.close()
  }

  get #callTimeout(): number {
    return this.#settings.callTimeout ?? 60_000
  }

  get #transferTimeouts(): TransferTimeouts {
    return this.#settings.transferTimeouts ?? DEFAULT_TRANSFER_TIMEOUTS
  }

  #target(origin = this.#origin): RpcTarget {
    return { origin, agent: this.#agent.agent }
  }

  #sessionRef(): Promise<string> {
    if (this.#session === undefined) {
      this.#current = undefined
      const login = this.#login(this.#origin, this.#callTimeout).then(({ origin, session }) => {
        this.#origin = origin
        this.#current = session
        this.sessionGeneration++
        return session
      })
      // A failed login is not kept: the next call tries again.
      login.catch(() => {
        if (this.#session === login) this.#session = undefined
      })
      this.#session = login
    }
    return this.#session
  }

  /** Forgets a session XAPI refused, unless another call already replaced it. */
  #dropSession(session: string): void {
    if (this.#current !== session) return
    this.#current = undefined
    this.#session = undefined
  }

  /** Logs in at `origin`, following HOST_IS_SLAVE to the master it names. */
  async #login(origin: URL, timeout: number, signal?: AbortSignal): Promise<{ origin: URL; session: string }> {
    let at = origin
    for (let hop = 0; ; hop++) {
      try {
        const session = await this.#rpc(this.#target(at), 'session.login_with_password', [this.#settings.username, this.#settings.password, '1.0', ORIGINATOR], { timeout, signal })
        return { origin: at, session: String(session) }
      } catch (error) {
        const master = error instanceof XapiError && error.code === 'HOST_IS_SLAVE' ? error.params[0] : undefined
        if (master === undefined || hop >= MAX_MASTER_HOPS) throw error
        at = onHost(at, master)
      }
    }
  }

  /**
   * Probes the master and every known member at once; the first login (or the
   * master a member names) wins. The same master found again keeps its
   * session, and with it the index's `event.from` token: its events are
   * followed on, not fetched again (a session it lost answers SESSION_INVALID
   * to the next call, which opens another). Another master is another session.
   */
  #failOver(cause: Error): Promise<void> {
    this.#failover ??= (async () => {
      const master = this.#origin.host
      const kept = this.#current
      const candidates = [...new Set([this.#origin.hostname.replace(/^\[|\]$/g, ''), ...this.#members])].map((address) => onHost(this.#origin, address))
      const found = new AbortController()
      const deadline = Date.now() + (this.#settings.probeTimeout ?? 20_000)
      const probes = candidates.map((candidate) => this.#probe(candidate, deadline, found.signal))
      this.#settings.log?.warn({ master, candidates: candidates.map((c) => c.host), err: cause }, 'XAPI: the master does not answer, probing the pool')
      let winner: { origin: URL; session: string }
      try {
        winner = await Promise.any(probes)
      } catch {
        throw new XapiTransportError(`no host of the pool answers (${candidates.map((c) => c.host).join(', ')})`)
      } finally {
        found.abort()
      }
      const same = winner.origin.host === master && kept !== undefined
      this.#settings.log?.warn({ master: winner.origin.host, sessionKept: same }, 'XAPI: failed over to the master found')
      // The probes' sessions not kept are logged out: sessions are counted per originator.
      for (const probe of probes) {
        void probe.then(
          ({ origin, session }) => (session === winner.session && !same ? undefined : this.#rpc(this.#target(origin), 'session.logout', [session], { timeout: 5_000 }).catch(() => undefined)),
          () => undefined,
        )
      }
      this.#origin = winner.origin
      if (same) return
      this.#current = winner.session
      this.#session = Promise.resolve(winner.session)
      this.sessionGeneration++
    })().finally(() => {
      this.#failover = undefined
    })
    return this.#failover
  }

  /** Logs in at `candidate` until it answers or `deadline` passes: a master restarting refuses connections for a while. */
  async #probe(candidate: URL, deadline: number, found: AbortSignal): Promise<{ origin: URL; session: string }> {
    for (;;) {
      try {
        return await this.#login(candidate, Math.max(1, deadline - Date.now()), found)
      } catch (error) {
        if (!isTransportError(error) || found.aborted || deadline - Date.now() <= PROBE_RETRY) throw error
        await new Promise((resolve) => setTimeout(resolve, PROBE_RETRY))
      }
    }
  }
}
