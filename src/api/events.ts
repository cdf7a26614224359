import { Type } from '@sinclair/typebox'
import { sendJson, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, ErrorResponses } from '../http/schemas.js'
import { SSE_TYPE, type EventStreams } from './event-streams.js'
import { BASE } from './paths.js'

const TAG = 'events'

/**
 * The event stream and its subscriptions. Any user may open a stream; what
 * it delivers is judged per object against the user's read privileges, and
 * subscribing to a collection they may read nothing of is refused.
 */
export function eventRoutes(streams: EventStreams, collections: readonly string[]): RouteDef[] {
  const Collection = Type.Union(collections.map((name) => Type.Literal(name)), { description: 'A record type' })
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/events`,
      operationId: 'open-event-stream',
      summary: 'Open a Server-Sent Events stream',
      tags: [TAG],
      access: { authenticated: true },
      responses: {
        200: {
          description:
            '`init` with the connection id first, `ping` every 30 s, then `add`/`update`/`remove` of subscribed collections, each with an `id:` event number. Reconnecting with `Last-Event-ID` replays what was missed per collection on subscription, or sends one `resync` event when the events are no longer held.',
          contentType: SSE_TYPE,
        },
        ...ErrorResponses,
      },
      handler: (ctx) => {
        const lastEventId = ctx.req.headers['last-event-id']
        streams.open(ctx, typeof lastEventId === 'string' ? lastEventId : undefined)
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/events/:id/subscriptions`,
      operationId: 'subscribe-events',
      summary: 'Subscribe an event connection to a collection (again: replace its fields)',
      tags: [TAG],
      access: { authenticated: true },
      params: Type.Object({ id: Type.String() }),
      body: Type.Object(
        {
          collection: Collection,
          fields: Type.Optional(Type.Union([Type.Literal('*'), Type.Array(Type.String())], { description: 'Fields delivered; all when omitted or `*`' })),
        },
        { additionalProperties: false },
      ),
      bodyRequired: true,
      responses: { 201: { description: 'The subscription id, which is the collection', schema: Type.Object({ id: Type.String() }) }, ...BodyErrorResponses },
      handler: ({ res, params, body, principal }) => {
        const { collection, fields } = body
        streams.subscribe(params.id, principal, collection, fields === '*' ? undefined : fields)
        sendJson(res, 201, { id: collection })
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/events/:id/subscriptions/:collection`,
      operationId: 'unsubscribe-events',
      summary: 'Unsubscribe an event connection from a collection',
      tags: [TAG],
      access: { authenticated: true },
      params: Type.Object({ id: Type.String(), collection: Type.String() }),
      responses: { 204: { description: 'Unsubscribed (also when it was not subscribed)' }, ...ErrorResponses },
      handler: ({ res, params, principal }) => {
        streams.unsubscribe(params.id, principal, params.collection)
        sendNoContent(res)
      },
    }),
  ]
}
