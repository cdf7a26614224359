import type { Authenticator } from '../auth/authenticate.js'
import type { Principal } from '../auth/principal.js'
import type { XoRecord } from '../driver/types.js'
import type { Feeds } from '../events/feeds.js'
import type { LiveStreams } from '../http/live-streams.js'
import { Flusher, Outbox } from '../http/outbox.js'
import type { StreamBudget } from '../http/stream-budget.js'
import type { Counter } from 'prom-client'
import type { RouteContext } from '../http/route.js'
import type { Metrics } from '../http/metrics.js'
import type { PrivilegeSet } from '../acl/evaluate.js'
import type { Visibilities } from '../acl/visibility.js'

/** What watch and event-stream routes share. */
export interface LiveDeps {
  readonly feeds: Feeds
  readonly streams: LiveStreams
  readonly flusher: Flusher
  /** undelivered bytes allowed per connection (`maxRamAllocatedPerSseClient`) */
  readonly maxBytes: number
  /** undelivered bytes allowed to all connections together (`maxRamAllocatedForSseClients`) */
  readonly budget: StreamBudget
  /** connections cut for holding too much, by reason */
  readonly cuts: Counter<'reason'>
  readonly recordBytes: (record: XoRecord) => Buffer
  readonly authenticator: Authenticator
  /** a non-administrator's privileges as they are now */
  readonly scopeOf: (userId: string) => PrivilegeSet
  readonly visibilities: Visibilities
  /** the access-control resource of each record type (collection) */
  readonly resourceOf: (type: string) => string | undefined
  readonly metrics: Metrics
}

export interface LiveResponse {
  readonly outbox: Outbox
  /** runs once when the response closes, however it closes */
  onClose(cleanup: () => void): void
}

/** What a long-lived response needs of its request: an authenticated one. */
export type LiveContext = Pick<RouteContext<unknown, unknown, unknown, Principal>, 'req' | 'res' | 'log' | 'principal'>

/**
 * Starts a long-lived 200 response: headers go out at once (a watcher knows
 * it is watching before it lists), writes are coalesced and bounded, and the
 * stream is registered for credential checks and shutdown.
 */
export function openLiveResponse(deps: LiveDeps, ctx: LiveContext, contentType: string, label: Record<string, string>): LiveResponse {
  const { res, req, log, principal } = ctx
  const fullLabel = { ...label, user: principal.email, userId: principal.id }
  res.statusCode = 200
  res.setHeader('Content-Type', contentType)
  res.setHeader('Cache-Control', 'no-cache, no-transform')
  res.setHeader('Connection', 'keep-alive')
  res.flushHeaders()
  const socket = res.socket
  const outbox = new Outbox(res, {
    limit: deps.maxBytes,
    flusher: deps.flusher,
    budget: deps.budget,
    onCut: (reason, undelivered, total) => {
      deps.cuts.inc({ reason })
      if (reason === 'connection') log.error({ ...fullLabel, undelivered, limit: deps.maxBytes }, 'too much undelivered data for a stream connection: closing it')
      else log.error({ ...fullLabel, undelivered, total, limit: deps.budget.limit }, 'too much undelivered data for all stream connections: closing the one with the most')
    },
  })
  const kind = label['watch'] === undefined ? 'events' : 'watch'
  deps.metrics.openStreams.inc({ kind })
  if (kind === 'events') deps.metrics.eventConnections.inc()
  const cleanups: Array<() => void> = [
    () => {
      deps.metrics.openStreams.dec({ kind })
      if (kind === 'events') deps.metrics.eventConnections.dec()
    },
  ]
  const unregister = deps.streams.add({
    label: fullLabel,
    credential: deps.authenticator.credentialOf({ cookie: req.headers.cookie, authorization: req.headers.authorization }, principal),
    end: () => {
      outbox.end()
      // The client is told by the end of the body; the connection is not kept for another request.
      res.once('finish', () => socket?.end())
    },
  })
  cleanups.push(unregister)
  res.once('close', () => {
    outbox.close()
    for (const cleanup of cleanups) cleanup()
  })
  return { outbox, onClose: (cleanup) => cleanups.push(cleanup) }
}
