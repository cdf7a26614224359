import { randomUUID } from 'node:crypto'
import { isAdmin, type Principal } from '../auth/principal.js'
import { notEnoughPrivileges } from '../acl/check.js'
import { noSuchObject } from '../errors.js'
import type { Membership, Sink } from '../events/feeds.js'
import { judgedFormat, streamAccess } from './live-access.js'
import { sseFrame, subscriptionFormat } from '../events/sse-format.js'
import type { Chunk } from '../http/chunk.js'
import type { Outbox } from '../http/outbox.js'
import { openLiveResponse, type LiveContext, type LiveDeps } from './live.js'

export const SSE_TYPE = 'text/event-stream'

interface Connection {
  readonly id: string
  readonly userId: string
  readonly outbox: Outbox
  readonly sink: Sink
  readonly subscriptions: Map<string, () => void>
  /** the event number the client last saw before reconnecting, until each collection has replayed from it or one could not */
  resumeFrom: number | undefined
  readonly replayed: Set<string>
}

export interface EventStreamOptions {
  readonly pingInterval: number
  readonly clock: () => number
}

/**
 * The `/rest/v0/events` connections and their subscriptions. A subscription
 * joins the shared feed of its collection under its field set, so each event
 * is serialized once per field set whatever the number of clients.
 */
export class EventStreams {
  readonly #deps: LiveDeps
  readonly #options: EventStreamOptions
  readonly #connections = new Map<string, Connection>()
  #ping: NodeJS.Timeout | undefined

  constructor(deps: LiveDeps, options: EventStreamOptions) {
    this.#deps = deps
    this.#options = options
  }

  open(ctx: LiveContext, lastEventId: string | undefined): void {
    const { principal } = ctx
    const id = randomUUID()
    const { outbox, onClose } = openLiveResponse(this.#deps, ctx, SSE_TYPE, { connection: id })
    outbox.push(sseFrame('init', JSON.stringify({ id })))
    let resumeFrom: number | undefined
    if (lastEventId !== undefined) {
      const after = /^\d{1,16}$/.test(lastEventId) ? Number(lastEventId) : NaN
      if (this.#deps.feeds.resumable(after)) resumeFrom = after
      else outbox.push(this.#resync())
    }
    const connection: Connection = { id, userId: principal.id, outbox, sink: outbox, subscriptions: new Map(), resumeFrom, replayed: new Set() }
    this.#connections.set(id, connection)
    this.#startPing()
    onClose(() => {
      for (const detach of connection.subscriptions.values()) detach()
      this.#connections.delete(id)
      if (this.#connections.size === 0) this.#stopPing()
    })
  }

  /** Subscribes, or replaces the fields of an existing subscription. */
  subscribe(connectionId: string, principal: Principal, collection: string, fields: readonly string[] | undefined): void {
    const connection = this.#connection(connectionId, principal)
    const resource = this.#deps.resourceOf(collection)
    // Subscribing to what no privilege lets the user read is refused, as a listing's route would be.
    if (!isAdmin(principal) && (resource === undefined || !this.#deps.scopeOf(principal.id).mayAllow(resource, 'read'))) {
      throw notEnoughPrivileges([{ resource: resource ?? collection, action: 'read' }])
    }
    connection.subscriptions.get(collection)?.()
    const paths = fields?.map((field) => field.split('.'))
    // Frames are shared by subscribers of the same field set who may see the same.
    const membership: Membership = {
      shape: JSON.stringify(fields ?? '*'),
      access: streamAccess(principal, resource, this.#deps),
      format: (visibility) => judgedFormat(subscriptionFormat(collection, paths, this.#deps.recordBytes), visibility?.visible),
    }
    if (connection.resumeFrom !== undefined && !connection.replayed.has(collection)) {
      connection.replayed.add(collection)
      // One resync tells the client to list everything again: later subscriptions need no replay.
      if (!this.#deps.feeds.replay(collection, connection.resumeFrom, membership, connection.sink)) {
        connection.outbox.push(this.#resync())
        connection.resumeFrom = undefined
      }
    }
    connection.subscriptions.set(collection, this.#deps.feeds.attach(collection, membership, connection.sink))
  }

  unsubscribe(connectionId: string, principal: Principal, collection: string): void {
    const connection = this.#connection(connectionId, principal)
    connection.subscriptions.get(collection)?.()
    connection.subscriptions.delete(collection)
  }

  close(): void {
    this.#stopPing()
  }

  #connection(id: string, principal: Principal): Connection {
    const connection = this.#connections.get(id)
    // Another user's connection is answered as if it did not exist.
    if (connection === undefined || connection.userId !== principal.id) throw noSuchObject(id, 'event connection')
    return connection
  }

  #resync(): Chunk {
    return sseFrame('resync', '{}', this.#deps.feeds.position)
  }

  #startPing(): void {
    if (this.#ping !== undefined) return
    this.#ping = setInterval(() => {
      const frame = sseFrame('ping', JSON.stringify({ ping: this.#options.clock() }))
      for (const connection of this.#connections.values()) connection.outbox.push(frame)
    }, this.#options.pingInterval)
    this.#ping.unref()
  }

  #stopPing(): void {
    clearInterval(this.#ping)
    this.#ping = undefined
  }
}
