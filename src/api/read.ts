import { Type, type TObject } from '@sinclair/typebox'
import type { XoRecord } from '../driver/types.js'
import { noSuchObject } from '../errors.js'
import { compileFilter } from '../filter/index.js'
import type { JsonCache } from '../http/json-cache.js'
import { NDJSON_TYPE, JSON_TYPE, sendJsonText, streamText } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorResponses } from '../http/schemas.js'
import { parseFields, pick, type FieldPath } from './projection.js'
import type { CollectionSource } from './sources.js'

export const BASE = '/rest/v0'

export const CollectionQuery = Type.Object({
  fields: Type.Optional(
    Type.String({
      description:
        'Comma-separated field names (dotted paths pick nested values); `*` for whole records. Without it the listing is an array of hrefs.',
      examples: ['name_label,power_state', '*'],
    }),
  ),
  filter: Type.Optional(
    Type.String({ description: 'Search expression (complex-matcher syntax)', examples: ['power_state:Running'] }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 0, description: 'Maximum number of objects returned' })),
  ndjson: Type.Optional(Type.Boolean({ description: 'Stream one JSON value per line (application/x-ndjson)' })),
})

interface CollectionQueryValue {
  fields?: string
  filter?: string
  limit?: number
  ndjson?: boolean
}

const hrefOf = (name: string, id: string): string => `${BASE}/${name}/${encodeURIComponent(id)}`

/** `{...record, href}` written from the record's cached text, without re-serializing it. */
function withHref(recordText: string, hrefText: string): string {
  return recordText.length <= 2 ? `{"href":${hrefText}}` : `${recordText.slice(0, -1)},"href":${hrefText}}`
}

export interface ListingOptions {
  readonly cache: JsonCache
}

/** The lazily produced text of each listed value, in order. */
function* listingTexts(
  source: CollectionSource,
  query: CollectionQueryValue,
  predicate: ((record: XoRecord) => boolean) | undefined,
  cache: JsonCache,
): Generator<string, void, undefined> {
  let remaining = query.limit ?? Infinity
  if (remaining === 0) return
  const fields = query.fields
  const paths: FieldPath[] | undefined = fields === undefined || fields === '*' ? undefined : parseFields(fields)
  const variant = fields === undefined ? 'href' : fields === '*' ? '*' : `fields:${fields}`
  for (const record of source.list()) {
    if (predicate !== undefined && !predicate(record)) continue
    yield cache.text(record, variant, () => {
      const href = JSON.stringify(hrefOf(source.name, record.id))
      if (fields === undefined) return href
      if (paths === undefined) return withHref(recordText(cache, record), href)
      const picked = JSON.stringify(pick(record, paths))
      return withHref(picked, href)
    })
    if (--remaining === 0) return
  }
}

export function recordText(cache: JsonCache, record: XoRecord): string {
  return cache.text(record, 'record', () => JSON.stringify(record))
}

function* jsonArray(texts: Iterable<string>): Generator<string, void, undefined> {
  let first = true
  yield '['
  for (const text of texts) {
    yield first ? text : ',' + text
    first = false
  }
  yield ']'
}

function* ndjsonLines(texts: Iterable<string>): Generator<string, void, undefined> {
  for (const text of texts) yield text + '\n'
}

/** GET /rest/v0/<name> and GET /rest/v0/<name>/:id for one source. */
export function readRoutes(source: CollectionSource, options: ListingOptions): RouteDef[] {
  const { cache } = options
  const tag = source.name
  const schema: TObject = source.schema
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}`,
      operationId: `list-${source.name}`,
      summary: `List ${source.name}`,
      tags: [tag],
      access: { privilege: { resource: source.resource, action: 'read' } },
      query: CollectionQuery,
      responses: {
        200: {
          description: 'Hrefs without `fields`; objects with `fields` (plus `href`); one value a line with `ndjson`',
          schema: Type.Union([Type.Array(Type.String()), Type.Array(Type.Partial(schema))]),
        },
        ...ErrorResponses,
      },
      handler: async ({ res, query }) => {
        const q = query as CollectionQueryValue
        // Parsed before the first byte so that a syntax error still gets its 400.
        const predicate = q.filter === undefined ? undefined : compileFilter(q.filter)
        const texts = listingTexts(source, q, predicate, cache)
        const pieces = q.ndjson === true ? ndjsonLines(texts) : jsonArray(texts)
        await streamText(res, 200, q.ndjson === true ? NDJSON_TYPE : JSON_TYPE, pieces)
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}/:id`,
      operationId: `get-${source.name}`,
      summary: `Get one object of ${source.name}`,
      tags: [tag],
      access: {
        privilege: { resource: source.resource, action: 'read' },
        ...(source.selfReadable ? { self: { param: 'id' } } : {}),
      },
      params: Type.Object({ id: Type.String() }),
      responses: { 200: { description: 'The whole record', schema }, ...ErrorResponses },
      handler: ({ res, params }) => {
        const id = params['id'] as string
        const record = source.get(id)
        if (record === undefined) throw noSuchObject(id, source.type)
        sendJsonText(res, 200, recordText(cache, record))
      },
    }),
  ]
}
