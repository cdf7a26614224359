import type { Logger } from 'pino'
import { Counter, Gauge } from 'prom-client'
import { StreamBudget } from '../http/stream-budget.js'
import { Visibilities } from '../acl/visibility.js'
import type { PrivilegeSet } from '../acl/evaluate.js'
import type { Authenticator } from '../auth/authenticate.js'
import type { Metrics } from '../http/metrics.js'
import type { Config } from '../config/config.js'
import type { EventBus } from '../events/bus.js'
import { Feeds, type ViewOf } from '../events/feeds.js'
import { EventLog } from '../events/log.js'
import type { JsonCache } from '../http/json-cache.js'
import { LiveStreams } from '../http/live-streams.js'
import { Flusher } from '../http/outbox.js'
import type { RouteDef } from '../http/route.js'
import { EventStreams } from './event-streams.js'
import { eventRoutes } from './events.js'
import type { LiveDeps } from './live.js'
import { hrefOf } from './paths.js'
import { recordBytes, withHref } from './read.js'
import type { CollectionSource } from './sources.js'
import { watchCollection, type Watch } from './watch.js'

/** how long stream writes are gathered into one (peers notes 2.4: 10 to 25 ms) */
const STREAM_FLUSH_MS = 15
const MIB = 1024 * 1024

export interface LiveChanges {
  readonly watch: Watch
  readonly routes: readonly RouteDef[]
  /** ends every open stream and stops reading the bus */
  close(): void
}

/** The event log and what reads it: collection watches and the event stream. */
export function createLiveChanges(deps: {
  readonly bus: EventBus
  readonly sources: readonly CollectionSource[]
  readonly cache: JsonCache
  readonly restApi: Config['restApi']
  readonly clock: () => number
  readonly log: Logger
  readonly authenticator: Authenticator
  readonly scopeOf: (userId: string) => PrivilegeSet
  /** moves whenever what any user may do can have changed */
  readonly accessVersion: () => number
  readonly metrics: Metrics
}): LiveChanges {
  const { restApi, cache, log } = deps
  const views = new Map<string, ViewOf>(
    deps.sources.map((source) => [source.type, source.view ?? ((record) => (record.type === source.type ? record : undefined))]),
  )
  const eventLog = new EventLog(deps.bus, {
    maxEvents: restApi.eventLogMaxEvents,
    maxBytes: restApi.maxRamAllocatedToEventLog * MIB,
    window: restApi.eventResumeWindow,
    minAge: restApi.eventResumeMinimum,
    clock: deps.clock,
    // The record's JSON bytes, counted without keeping them: cached, a pool's connection would fill the
    // JSON cache with every record it adds (70 MiB at 10,000 VMs), read or not (issue 28).
    sizeOf: (change) => Buffer.byteLength(JSON.stringify(change.object)),
    collectionsOf: ({ object, previous }) =>
      [...views].filter(([, viewOf]) => viewOf(object) !== undefined || (previous !== undefined && viewOf(previous) !== undefined)).map(([collection]) => collection),
    onReaderError: (error) => log.error({ err: error }, 'event delivery failed'),
  })
  const flusher = new Flusher(STREAM_FLUSH_MS)
  const streams = new LiveStreams({ maxSleep: restApi.streamCredentialCheckInterval, clock: deps.clock, log })
  // A user's streams are checked when their record or their tokens change, and only then.
  const stopCredentials = deps.authenticator.onCredentialsChange((userId) => streams.recheck(userId))
  const stopUsers = deps.bus.subscribe((change) => {
    if (change.object.type === 'user') streams.recheck(change.object.id)
  })
  const feeds = new Feeds(eventLog, views, deps.accessVersion)
  new Gauge({
    name: 'keel_event_audiences',
    help: 'Audiences of live changes, by collection: connections with the same fields, filter and effective read privileges share one, and each change is formatted once per audience',
    labelNames: ['collection'],
    registers: [deps.metrics.registry],
    collect() {
      this.reset()
      for (const [collection, count] of feeds.audiences()) this.set({ collection }, count)
    },
  })
  new Gauge({
    name: 'keel_event_resume_window_seconds',
    help: 'How far back a client of each collection can resume (Last-Event-ID, since=) now',
    labelNames: ['collection'],
    registers: [deps.metrics.registry],
    collect() {
      for (const [collection, window] of feeds.windows()) this.set({ collection }, window / 1000)
    },
  })
  const budget = new StreamBudget(Math.round(restApi.maxRamAllocatedForSseClients * MIB))
  new Gauge({
    name: 'keel_stream_undelivered_bytes',
    help: 'Bytes event streams and watches have yet to deliver, all together (bounded by maxRamAllocatedForSseClients)',
    registers: [deps.metrics.registry],
    collect() {
      this.set(budget.total)
    },
  })
  const live: LiveDeps = {
    feeds,
    budget,
    cuts: new Counter({
      name: 'keel_stream_cuts_total',
      help: 'Event streams and watches closed for not reading: past their own bound (reason="connection") or the largest while all together passed theirs (reason="total")',
      labelNames: ['reason'],
      registers: [deps.metrics.registry],
    }),
    streams,
    flusher,
    maxBytes: Math.round(restApi.maxRamAllocatedPerSseClient * MIB),
    recordBytes: (record) => recordBytes(cache, record),
    authenticator: deps.authenticator,
    scopeOf: deps.scopeOf,
    visibilities: new Visibilities(),
    resourceOf: (type) => deps.sources.find((source) => source.type === type)?.resource,
    metrics: deps.metrics,
  }
  const eventStreams = new EventStreams(live, { pingInterval: restApi.ssePingInterval, clock: deps.clock })
  return {
    watch: watchCollection(live, hrefOf, withHref),
    routes: eventRoutes(eventStreams, [...views.keys()]),
    close: () => {
      stopCredentials()
      stopUsers()
      streams.endAll()
      eventStreams.close()
      flusher.close()
      eventLog.close()
    },
  }
}
