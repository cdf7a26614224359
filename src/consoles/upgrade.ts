import { STATUS_CODES, type IncomingMessage } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import type { Gauge } from 'prom-client'
import { WebSocketServer, type RawData, type WebSocket } from 'ws'
import type { Authenticator } from '../auth/authenticate.js'
import { invalidCredentials } from '../auth/authenticate.js'
import type { PrivilegeSet } from '../acl/evaluate.js'
import { notEnoughPrivileges } from '../acl/check.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import type { XoRecord } from '../driver/types.js'
import { KeelError, noSuchObject } from '../errors.js'
import { toErrorResponse } from '../http/error-response.js'
import { nextRequestId } from '../http/request-id.js'
import { refuseCrossSiteCookie } from '../http/same-origin.js'
import type { RequestLogEntry } from '../log.js'
import { CLOSE, CONSOLE_ACTION, consoleResourceOf, hasLiveConsole, mayOpen, type OpenConsoles } from './open-consoles.js'
import { RfbProtocolError } from './rfb/errors.js'
import type { ConsoleSource } from './sources.js'

/** The reference's console path: `/api/consoles/<VM or host id>`. */
export const CONSOLE_ROUTE = '/api/consoles/:id'
const CONSOLE_PATH = /^\/api\/consoles\/([^/?#]+)$/

/** A client message is a few bytes (a key, a pointer move, an update request): 64 KiB bounds any of them. */
export const MAX_CONSOLE_MESSAGE = 64 * 1024
/** Updates waiting for a viewer that does not read, at most; past it the console is closed. */
const MAX_UNSENT = 8 * 1024 * 1024
/** Past this much unsent, a relayed console stops reading its pool until the viewer has taken it (a few full screens). */
const RELAY_HIGH_WATER = 1024 * 1024

export interface ConsoleUpgradeDeps {
  readonly authenticator: Authenticator
  readonly scopeOf: (userId: string) => PrivilegeSet
  readonly getObject: (id: string) => XoRecord | undefined
  readonly consoles: OpenConsoles
  readonly source: ConsoleSource
  readonly log: Logger
  readonly requestLog: (entry: RequestLogEntry) => void
  readonly observe: (route: string, method: string, status: number, seconds: number) => void
  /** counts open consoles (`keel_open_streams{kind="console"}`) */
  readonly openStreams: Pick<Gauge<'kind'>, 'inc' | 'dec'>
  /** answers an upgrade on another path (as the plain request it also is) */
  readonly otherwise: (req: IncomingMessage, socket: Duplex) => void
}

/**
 * Answers HTTP upgrades: a console WebSocket at `/api/consoles/<id>`, where
 * noVNC connects. Everything a request would be refused for is refused
 * before the upgrade, with the status and error body the REST API answers,
 * so that a client is told why (a browser's WebSocket only sees it fail).
 */
export class ConsoleUpgrades {
  readonly #deps: ConsoleUpgradeDeps
  readonly #server = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_CONSOLE_MESSAGE,
    perMessageDeflate: false,
    // Older noVNC asks for `binary`; current noVNC asks for nothing.
    handleProtocols: (protocols) => (protocols.has('binary') ? 'binary' : false),
  })

  constructor(deps: ConsoleUpgradeDeps) {
    this.#deps = deps
  }

  /** The server's `upgrade` listener. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!CONSOLE_PATH.test((req.url ?? '/').split('?')[0] ?? '/')) return this.#deps.otherwise(req, socket)
    const started = performance.now()
    const incoming = req.headers['x-request-id']
    const requestId = typeof incoming === 'string' && /^[\w.-]{1,64}$/.test(incoming) ? incoming : nextRequestId()
    const done = (status: number, aborted = false): void => {
      const ms = Math.round((performance.now() - started) * 1000) / 1000
      this.#deps.observe(CONSOLE_ROUTE, req.method ?? 'GET', status, ms / 1000)
      this.#deps.requestLog({ reqId: requestId, method: req.method ?? 'GET', url: req.url, status, ms, aborted })
    }
    socket.on('error', (error) => this.#deps.log.debug({ reqId: requestId, err: error }, 'console socket error'))
    const refuse = (error: unknown): void => done(refuseUpgrade(socket, req, error, requestId, this.#deps.log))
    const open = ({ principal, object }: Admitted): void => {
      if (socket.destroyed) return done(101, true)
      try {
        // Checked again: a password may have taken a while, and others may have opened consoles meanwhile.
        this.#deps.consoles.checkRoom(principal.id)
      } catch (error) {
        return refuse(error)
      }
      this.#open(req, socket, head, principal, object, () => done(101))
    }
    try {
      const admitted = this.#admit(req, socket)
      if (admitted instanceof Promise) admitted.then(open, refuse)
      else open(admitted)
    } catch (error) {
      refuse(error)
    }
  }

  /** Closes every console and refuses upgrades from then on. */
  close(): void {
    this.#deps.consoles.close()
    this.#server.close()
  }

  #admit(req: IncomingMessage, socket: Duplex): Admitted | Promise<Admitted> {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const match = CONSOLE_PATH.exec(path)
    if (match === null || req.method !== 'GET') throw new KeelError('NO_SUCH_ROUTE', `no such route ${req.method ?? 'GET'} ${path}`, { method: req.method, path })
    const id = decodeId(match[1] as string)
    refuseCrossSiteCookie(req)
    const caller = this.#deps.authenticator.authenticate({ cookie: req.headers.cookie, authorization: req.headers.authorization, connection: socket })
    const check = (known: Principal | undefined): Admitted => {
      if (known === undefined) throw invalidCredentials()
      return this.#authorize(known, id)
    }
    return caller instanceof Promise ? caller.then(check) : check(caller)
  }

  /** A missing object (or one without a console) is a 404 for everyone, one the caller may not open a 403, as REST targets. */
  #authorize(caller: Principal, id: string): Admitted {
    const principal = isAdmin(caller) ? caller : { ...caller, privileges: this.#deps.scopeOf(caller.id) }
    const found = this.#deps.getObject(id)
    // XO 6 opens a host's console by its control domain's id (the reference serves dom0's console): the host's it is.
    const object = found?.type === 'VM-controller' ? this.#deps.getObject(String(found['$container'])) : found
    const resource = object === undefined ? undefined : consoleResourceOf(object)
    if (object === undefined || resource === undefined) throw noSuchObject(id, 'VM or host')
    if (!mayOpen(principal, object, this.#deps.scopeOf)) throw notEnoughPrivileges([{ resource, action: CONSOLE_ACTION, objectId: id }])
    if (!hasLiveConsole(object)) {
      throw new KeelError('INCORRECT_STATE', `the ${object.type} is not running: it has no console`, { id, expected: 'Running', actual: (object as { power_state?: unknown }).power_state })
    }
    this.#deps.consoles.checkRoom(principal.id)
    return { principal, object }
  }

  #open(req: IncomingMessage, socket: Duplex, head: Buffer, principal: Principal, object: XoRecord, upgraded: () => void): void {
    const { consoles, source, authenticator, log, openStreams } = this.#deps
    const credential = authenticator.credentialOf({ cookie: req.headers.cookie, authorization: req.headers.authorization }, principal)
    this.#server.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      upgraded()
      const link = source(object)
      openStreams.inc({ kind: 'console' })
      const forget = consoles.add({
        principal,
        credential,
        objectId: object.id,
        close: (code, reason) => ws.close(code, reason),
      })
      ws.on('close', () => {
        forget()
        link.close()
        openStreams.dec({ kind: 'console' })
      })
      ws.on('error', (error) => log.debug({ err: error, console: object.id }, 'console WebSocket error'))
      ws.on('message', (data: RawData, isBinary: boolean) => {
        if (!isBinary) return ws.close(CLOSE.protocolError, 'RFB travels in binary messages')
        try {
          link.receive(toBuffer(data))
        } catch (error) {
          if (error instanceof RfbProtocolError) return ws.close(CLOSE.protocolError, error.message.slice(0, 120))
          log.error({ err: error, console: object.id }, 'console failed')
          ws.close(CLOSE.internalError, 'internal error')
        }
      })
      const waiting: Array<() => void> = []
      const flushed = (): void => {
        if (ws.bufferedAmount < RELAY_HIGH_WATER) for (const resume of waiting.splice(0)) resume()
      }
      link.start({
        send: (bytes) => {
          if (ws.readyState !== ws.OPEN) return true
          if (ws.bufferedAmount > MAX_UNSENT) {
            ws.close(CLOSE.policy, 'the viewer is not reading')
            return true
          }
          ws.send(bytes, flushed)
          return ws.bufferedAmount < RELAY_HIGH_WATER
        },
        drained: (resume) => {
          waiting.push(resume)
          flushed()
        },
        ended: (reason, failed = false) => ws.close(failed ? CLOSE.internalError : CLOSE.normal, reason.slice(0, 120)),
      })
    })
  }
}

interface Admitted {
  readonly principal: Principal
  readonly object: XoRecord
}

/** An id as the path carries it; one that does not decode names no object. */
function decodeId(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    throw noSuchObject(text, 'VM or host')
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data
  if (Array.isArray(data)) return Buffer.concat(data)
  return Buffer.from(data)
}

/** Answers a refused upgrade on the raw socket, as the REST API would have, and closes it; returns the status. */
function refuseUpgrade(socket: Duplex, req: IncomingMessage, error: unknown, requestId: string, log: Logger): number {
  const { status, body } = toErrorResponse(error, requestId)
  if (status >= 500) log.error({ reqId: requestId, err: error }, 'console upgrade failed')
  if (socket.destroyed) return status
  const text = JSON.stringify(body)
  const challenge = status === 401 && !/(?:^|;)\s*authenticationToken=/.test(req.headers.cookie ?? '') ? 'WWW-Authenticate: Basic realm="keel"\r\n' : ''
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nX-Request-Id: ${requestId}\r\n${challenge}\r\n${text}`,
  )
  return status
}
