import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { Type } from '@sinclair/typebox'
import type { Authenticator } from '../auth/authenticate.js'
import { invalidCredentials } from '../auth/authenticate.js'
import { isAdmin } from '../auth/principal.js'
import type { Driver } from '../driver/types.js'
import { KeelError, forbidden } from '../errors.js'
import type { Metrics } from '../http/metrics.js'
import { sendJson } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorBodySchema, ErrorResponses } from '../http/schemas.js'
import type { Db } from '../store/database.js'

export interface OperationsDeps {
  readonly db: Db
  readonly driver: Driver
  readonly metrics: Metrics
  readonly authenticator: Authenticator
  /** `[metrics] token`: lets a scraper in without an administrator's credentials */
  readonly metricsToken: string | undefined
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest()

/** Why the service cannot serve, or undefined when it can. */
function unhealthy(db: Db, driver: Driver): string | undefined {
  try {
    db.prepare('SELECT 1').get()
  } catch (error) {
    return `the store does not answer: ${error instanceof Error ? error.message : String(error)}`
  }
  return driver.isOpen() ? undefined : 'the driver is not open'
}

/** `GET /healthz` for load balancers and `GET /metrics` for Prometheus. */
export function operationsRoutes(deps: OperationsDeps): RouteDef[] {
  const tokenHash = deps.metricsToken === undefined ? undefined : sha256(deps.metricsToken)
  // The scrape token is compared by hash, in constant time; anything else must be an administrator.
  const mayScrape = async (req: IncomingMessage): Promise<void> => {
    const authorization = req.headers.authorization
    if (tokenHash !== undefined && authorization?.toLowerCase().startsWith('bearer ') === true) {
      if (timingSafeEqual(sha256(authorization.slice(7).trim()), tokenHash)) return
    }
    const principal = await deps.authenticator.authenticate({ cookie: req.headers.cookie, authorization })
    if (principal === undefined) throw invalidCredentials()
    if (!isAdmin(principal)) throw forbidden('metrics are for administrators or the configured scrape token')
  }
  return [
    defineRoute({
      method: 'GET',
      path: '/healthz',
      operationId: 'healthz',
      summary: 'Whether the service can serve: its store answers and its driver is open',
      tags: ['operations'],
      access: { public: true },
      responses: {
        200: { description: 'Serving', schema: Type.Object({ status: Type.Literal('ok') }) },
        503: { description: 'Not serving, and why', schema: ErrorBodySchema },
      },
      handler: ({ res }) => {
        const reason = unhealthy(deps.db, deps.driver)
        if (reason !== undefined) throw new KeelError('SERVICE_UNAVAILABLE', `unhealthy: ${reason}`, { reason })
        sendJson(res, 200, { status: 'ok' })
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics: requests by route and status, latency, event-loop delay, open streams, memory',
      tags: ['operations'],
      // Checked in the handler: the scrape token is not a user credential.
      access: { public: true },
      responses: { 200: { description: 'Prometheus text format', contentType: 'text/plain; version=0.0.4' }, ...ErrorResponses },
      handler: async ({ req, res }) => {
        await mayScrape(req)
        const text = await deps.metrics.text()
        res.statusCode = 200
        res.setHeader('Content-Type', deps.metrics.contentType)
        res.setHeader('Content-Length', Buffer.byteLength(text))
        res.end(text)
      },
    }),
  ]
}
