import { Type } from '@sinclair/typebox'
import { badQuery } from '../errors.js'
import type { Membership } from '../events/feeds.js'
import { watchFormat, watchLine } from '../events/watch-format.js'
import { compileFilter } from '../filter/index.js'
import { NDJSON_TYPE } from '../http/reply.js'
import { openLiveResponse, type LiveContext, type LiveDeps } from './live.js'
import { parseFields } from './projection.js'
import type { CollectionSource } from './sources.js'
import type { XoRecord } from '../driver/types.js'
import { streamAccess } from './live-access.js'

/** The listing parameters of watch mode. */
export const WatchQuery = {
  watch: Type.Optional(Type.Boolean({ description: 'With `ndjson`, stream changes (`["update", value]`, `["remove", value]`) instead of the content' })),
  since: Type.Optional(
    Type.String({
      pattern: '^(now|\\d{1,16})$',
      description:
        'Watch mode: resume after this event number (or `now`); each line then carries its event number as a third element, and a `["resync", null, n]` line says the events were no longer held',
    }),
  ),
}

export interface WatchQueryValue {
  readonly fields?: string
  readonly filter?: string
  readonly ndjson?: boolean
  readonly since?: string
}

export type Watch = (source: CollectionSource, query: WatchQueryValue, ctx: LiveContext) => void

/**
 * `GET /rest/v0/<collection>?ndjson=true&watch=true`: no snapshot, then one
 * line per change after the moment the headers go out. Listing after the
 * headers arrive and applying the lines loses nothing.
 */
export function watchCollection(deps: LiveDeps, hrefOf: (collection: string, id: string) => string, withHref: (record: Buffer, href: string) => Buffer): Watch {
  return (source, query, ctx) => {
    if (query.ndjson !== true) throw badQuery('watch', 'watch=true requires ndjson=true')
    const matching = query.filter === undefined ? undefined : compileFilter(query.filter)
    const fields = query.fields
    const numbered = query.since !== undefined
    // Lines are shared by watchers of the same query who may see the same.
    const membership: Membership = {
      shape: JSON.stringify([fields ?? null, query.filter ?? null, numbered]),
      access: streamAccess(ctx.principal, source.resource, deps),
      format: (visibility) => {
        const visible = visibility?.visible
        // Objects the user may not read never show; one that stops being readable leaves, as it does a filter.
        const predicate =
          visible === undefined ? matching : matching === undefined ? visible : (record: XoRecord) => matching(record) && visible(record)
        return watchFormat({
          fields,
          paths: fields === undefined || fields === '*' ? undefined : parseFields(fields),
          predicate,
          numbered,
          hrefOf: (id) => hrefOf(source.name, id),
          withHref: (record, href) => withHref(deps.recordBytes(record), href),
        })
      },
    }
    const { outbox, onClose } = openLiveResponse(deps, ctx, NDJSON_TYPE, { watch: source.name })
    if (query.since !== undefined && query.since !== 'now' && !deps.feeds.replay(source.type, Number(query.since), membership, outbox)) {
      outbox.push(watchLine('resync', 'null', deps.feeds.position))
    }
    onClose(deps.feeds.attach(source.type, membership, outbox))
  }
}
