import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import type { Principal } from '../auth/principal.js'
import type { RouteContext } from './route.js'

/**
 * What the server hands a route's handler, made by a constructor rather than an object literal.
 *
 * V8 pretenures by allocation site: once most objects of one literal are still alive at the
 * young collections, that literal allocates in the old generation from then on, wherever it runs.
 * The context of every route came from one literal, and the contexts of uncached listings
 * live for seconds; after ten seconds of them at 50 connections, every single-object read's
 * context was allocated old, and, dead there, still held its request and response, which the
 * young collections then kept until they were promoted: 2.2 KB a request, full collections
 * after them (bench/RESULTS.md, 2026-11-27, issue 30). A constructor's objects have no
 * allocation site, so they always start young.
 */
export class RequestContext implements RouteContext {
  declare readonly req: IncomingMessage
  declare readonly res: ServerResponse
  declare readonly params: Readonly<Record<string, string>>
  declare readonly query: Readonly<Record<string, unknown>>
  declare readonly body: unknown
  declare readonly principal: Principal | undefined
  declare readonly requestId: string
  declare readonly log: Logger

  // Declared fields and assignments, not parameter properties: those would be defined on
  // every context first, then assigned.
  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    params: Readonly<Record<string, string>>,
    query: Readonly<Record<string, unknown>>,
    body: unknown,
    principal: Principal | undefined,
    requestId: string,
    log: Logger,
  ) {
    this.req = req
    this.res = res
    this.params = params
    this.query = query
    this.body = body
    this.principal = principal
    this.requestId = requestId
    this.log = log
  }

  /** The same request with its checked body. */
  withBody(body: unknown): RequestContext {
    return new RequestContext(this.req, this.res, this.params, this.query, body, this.principal, this.requestId, this.log)
  }
}
