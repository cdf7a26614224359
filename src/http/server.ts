import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { authorize } from '../acl/authorize.js'
import type { Authenticator } from '../auth/authenticate.js'
import { invalidCredentials } from '../auth/authenticate.js'
import type { PrivilegeSet } from '../acl/evaluate.js'
import { isAdmin, type Principal } from '../auth/principal.js'
import { KeelError } from '../errors.js'
import { answerClientError, type ParserError } from './client-error.js'
import { sendError } from './error-response.js'
import type { Metrics } from './metrics.js'
import type { RequestLogEntry } from '../log.js'
import { readJsonBody } from './body.js'
import { nextRequestId } from './request-id.js'
import { KeelResponse } from './response.js'
import { deferContinue, isAwaitingContinue } from './continue.js'
import { JSON_BODY_TIMEOUT, watchIdle, withinBodyTimeout } from './timeouts.js'
import type { Router, RouteMatch } from './router.js'
import { ConnectionRoutes } from './connection-routes.js'
import { RequestContext } from './request-context.js'
import type { StreamPacer } from './stream-pacer.js'
import { holdTickShape } from './tick-shape.js'
import { refuseCrossSite } from './same-origin.js'

export interface HttpOptions {
  readonly router: Router
  readonly authenticator: Authenticator
  readonly log: Logger
  readonly maxJsonBodySize: number
  /** a non-administrator's effective privileges, evaluated by access control */
  readonly scopeOf: (userId: string) => PrivilegeSet
  /** Maximum length of a request target (path and query string). */
  readonly maxUrlLength?: number
  readonly metrics: Metrics
  readonly requestLog: (entry: RequestLogEntry) => void
  /** ms without a byte moving either way after which a streaming route's request is cut */
  readonly idleTimeout: number
  /** told of every answered request, so that streams make room for the API */
  readonly pacer: StreamPacer
}

/** What the response's log line and metrics need to know of the route that answered. */
interface Answered {
  route: string
}

const REQUEST_ID = /^[\w.-]{1,64}$/
/** The request line and headers together; beyond it node:http refuses the request (431, or 414 for the line). */
export const MAX_HEADER_SIZE = 65536
/** The request target alone. */
export const MAX_URL_LENGTH = 16384

type Maybe<T> = T | Promise<T>

const isPromise = <T>(value: Maybe<T>): value is Promise<T> => value instanceof Promise

/**
 * Routes and authenticates a request, then `admit`s it. Each step stays
 * synchronous as long as nothing has to wait (a token, no body, a synchronous
 * handler), and a closure is made only where something does: on the hot path
 * a promise or a closure per step cost more than the step.
 */
function handle(
  options: HttpOptions,
  routes: ConnectionRoutes,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  answered: Answered,
): Maybe<void> {
  const target = req.url ?? '/'
  if (target.length > (options.maxUrlLength ?? MAX_URL_LENGTH)) {
    throw new KeelError('URI_TOO_LONG', 'request target is too long', { limit: options.maxUrlLength ?? MAX_URL_LENGTH })
  }
  const method = req.method ?? 'GET'
  const { path, queryText, match } = routes.route(req.socket, method, target)
  if (match === undefined) {
    const allowed = options.router.allowedMethods(path)
    if (allowed.length > 0) {
      res.setHeader('Allow', allowed.join(', '))
      throw new KeelError('METHOD_NOT_ALLOWED', `method ${method} is not allowed on ${path}`, { allowed })
    }
    throw new KeelError('NO_SUCH_ROUTE', `no such route ${method} ${path}`, { method, path })
  }
  const { def } = match.route
  answered.route = def.path
  refuseCrossSite(req, method)
  if (def.idleTimeout !== undefined) watchIdle(req, res, def.idleTimeout === 'default' ? options.idleTimeout : def.idleTimeout)
  if (def.access.public) return admit(options, req, res, requestId, match, queryText, undefined)
  const caller = options.authenticator.authenticate({ cookie: req.headers.cookie, authorization: req.headers.authorization, connection: req.socket })
  return isPromise(caller)
    ? caller.then((known) => admit(options, req, res, requestId, match, queryText, known))
    : admit(options, req, res, requestId, match, queryText, caller)
}

/** Authorizes, validates and runs a routed request: `caller` is who authenticated, if the route is not public. */
function admit(
  options: HttpOptions,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  { route, params }: RouteMatch,
  queryText: string,
  caller: Principal | undefined,
): Maybe<void> {
  const { def } = route
  let principal: Principal | undefined
  if (!def.access.public) {
    if (caller === undefined) throw invalidCredentials()
    principal = isAdmin(caller) ? caller : { ...caller, privileges: options.scopeOf(caller.id) }
    authorize(def.access, principal, params)
  }
  route.checkParams?.(params)
  const query = route.checkQuery?.(new URLSearchParams(queryText)) ?? {}
  const ctx = new RequestContext(req, res, params, query, undefined, principal, requestId, options.log)
  const { checkBody } = route
  if (checkBody === undefined) return def.handler(ctx)
  const body = withinBodyTimeout(req, res, JSON_BODY_TIMEOUT, readJsonBody(req, options.maxJsonBodySize))
  const run = (value: unknown): Maybe<void> => {
    if (value === undefined && def.bodyRequired) {
      throw new KeelError('INVALID_PARAMETERS', 'a JSON body is required', { errors: [{ path: 'body', message: 'is required' }] })
    }
    if (value !== undefined) checkBody(value)
    return def.handler(ctx.withBody(value))
  }
  return isPromise(body) ? body.then(run) : run(body)
}

/** A failed request's answer: its error, or a cut connection once its headers are gone. */
function fail(options: HttpOptions, req: IncomingMessage, res: ServerResponse, requestId: string, error: unknown): void {
  if (res.headersSent) {
    // Too late for a status: cutting the connection is the only honest signal of a broken body.
    options.log.error({ reqId: requestId, err: error }, 'response failed after its headers were sent')
    res.destroy(error instanceof Error ? error : undefined)
    return
  }
  if (isAwaitingContinue(req) || (error instanceof KeelError && (error.code === 'BODY_TOO_LARGE' || error.code === 'UNSUPPORTED_MEDIA_TYPE'))) {
    // The unread body would otherwise be parsed as the next request; one never invited is not waited for.
    res.setHeader('Connection', 'close')
  }
  if (sendError(res, error, requestId) >= 500) options.log.error({ reqId: requestId, err: error }, 'request failed')
}

/** An answered request's metrics and log line. */
function account(options: HttpOptions, req: IncomingMessage, res: ServerResponse, requestId: string, route: string, started: number, aborted: boolean): void {
  const ms = Math.round((performance.now() - started) * 1000) / 1000
  options.metrics.observeRequest(route, req.method ?? 'GET', res.statusCode, ms / 1000)
  options.pacer.answered()
  options.requestLog({ reqId: requestId, method: req.method ?? 'GET', url: req.url, status: res.statusCode, ms, aborted })
}

export function createHttpServer(options: HttpOptions): Server {
  const { log } = options
  holdTickShape()
  const routes = new ConnectionRoutes(options.router)
  // Headers may be larger than Node's 16 KiB default so that an overlong target meets the router's 414 first.
  // No requestTimeout: a disk upload may rightly take hours; stalls are what the idle timeout cuts.
  const server = createServer({ ServerResponse: KeelResponse, requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 5_000, maxHeaderSize: MAX_HEADER_SIZE })
  const serve = (req: IncomingMessage, res: KeelResponse): void => {
    const started = performance.now()
    const incoming = req.headers['x-request-id']
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : nextRequestId()
    res.requestId = requestId
    const answered: Answered = { route: 'unmatched' }
    let pending: Maybe<void> = undefined
    try {
      pending = handle(options, routes, req, res, requestId, answered)
      if (isPromise(pending)) pending.catch((error: unknown) => fail(options, req, res, requestId, error))
    } catch (error) {
      fail(options, req, res, requestId, error)
    }
    // A response ended before the handler returned is accounted for now: a
    // 'close' listener (and its closures) per request showed on the single-object hot path.
    if (!isPromise(pending) && res.writableEnded) account(options, req, res, requestId, answered.route, started, res.destroyed)
    else res.on('close', () => account(options, req, res, requestId, answered.route, started, !res.writableFinished))
  }
  server.on('request', serve)
  server.on('checkContinue', (req: IncomingMessage, res: KeelResponse) => {
    deferContinue(req, res)
    serve(req, res)
  })
  server.on('clientError', (error: ParserError, socket: Duplex) => answerClientError(error, socket, log, { maxHeaderSize: MAX_HEADER_SIZE }))
  return server
}
