import type { ServerResponse } from 'node:http'
import { Type, type Static, type TObject } from '@sinclair/typebox'
import type { XoRecord } from '../driver/types.js'
import { readableBy } from '../acl/check.js'
import type { Principal } from '../auth/principal.js'
import { compileFilter, planFilter, type FilterPlan, type FilterPredicate } from '../filter/index.js'
import type { Versions } from '../events/versions.js'
import type { HeavyReads } from '../http/heavy-reads.js'
import { ChunkPool } from '../http/chunk-pool.js'
import type { JsonCache } from '../http/json-cache.js'
import { NDJSON_TYPE, JSON_TYPE, sendJsonBytes, sendLargeBody, streamChunks } from '../http/reply.js'
import { defineRoute, type ResponseSpec, type RouteDef } from '../http/route.js'
import { ErrorResponses } from '../http/schemas.js'
import { hrefOf, BASE } from './paths.js'
import { parseFields, pick, type FieldPath } from './projection.js'
import type { ListingCache } from './listing-cache.js'
import { BATCH, framed } from './framing.js'
import { ListingIndex, type Candidates } from './listing-index.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'
import { WatchQuery, type Watch } from './watch.js'

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
  ...WatchQuery,
})

export type CollectionQueryValue = Static<typeof CollectionQuery>

/** `{...record, href}` made from the record's cached bytes, without serializing it again. */
export function withHref(record: Buffer, hrefText: string): Buffer {
  return record.length <= 2
    ? Buffer.from(`{"href":${hrefText}}`)
    : Buffer.concat([record.subarray(0, record.length - 1), Buffer.from(`,"href":${hrefText}}`)])
}

export interface ListingOptions {
  readonly cache: JsonCache
  readonly listings: ListingCache
  readonly versions: Versions
  readonly watch?: Watch
  /** false when the collection serves its single objects with a route of its own */
  readonly single?: boolean
  /** admission of listings that scan a large collection (none: all admitted) */
  readonly heavy?: HeavyReads
}

/** A listing walking this many records or more, not answered from the cache, is a heavy read. */
export const HEAVY_LISTING_RECORDS = 1000
/**
 * A cached body this large is a heavy read too: sending it costs the core
 * more than building a small listing (the kernel's copies), and the socket
 * takes it in many writes.
 */
export const LARGE_CACHED_BODY = 1024 * 1024

/** What a listing's texts are cached under, and how one is made: the href alone, the whole record or some fields. */
function textVariant(source: CollectionSource, query: CollectionQueryValue, cache: JsonCache): { variant: string; textOf: (record: XoRecord) => Buffer } {
  const fields = query.fields
  const paths: FieldPath[] | undefined = fields === undefined || fields === '*' ? undefined : parseFields(fields)
  // Texts embed the href, so a variant belongs to its collection.
  const variant = `${source.name}\0${fields === undefined ? 'href' : fields === '*' ? '*' : `fields:${fields}`}`
  const produce = (record: XoRecord): string | Buffer => {
    const href = hrefOf(source.name, record.id)
    if (fields === undefined) return JSON.stringify(href)
    if (paths === undefined) return withHref(recordBytes(cache, record), JSON.stringify(href))
    const picked = pick(record, paths)
    picked['href'] = href
    return JSON.stringify(picked)
  }
  return { variant, textOf: cache.variant(variant, produce) }
}

/** The lazily produced bytes of each listed value, in order. */
function* listingTexts(
  source: CollectionSource,
  records: Iterable<XoRecord>,
  query: CollectionQueryValue,
  predicate: ((record: XoRecord) => boolean) | undefined,
  cache: JsonCache,
): Generator<Buffer, void, undefined> {
  let remaining = query.limit ?? Infinity
  if (remaining === 0) return
  const { textOf } = textVariant(source, query, cache)
  for (const record of records) {
    if (predicate !== undefined && !predicate(record)) continue
    yield textOf(record)
    if (--remaining === 0) return
  }
}

/** The same, for the records an index kept: by position, their texts kept by position too. */
function* candidateTexts(
  { records, positions, keeps }: Candidates,
  textAt: (position: number) => Buffer,
  query: CollectionQueryValue,
  visible: ((record: XoRecord) => boolean) | undefined,
): Generator<Buffer, void, undefined> {
  let remaining = query.limit ?? Infinity
  if (remaining === 0) return
  for (let i = 0; i < positions.length; i++) {
    const position = positions[i]!
    if (!keeps(position) || (visible !== undefined && !visible(records[position]!))) continue
    yield textAt(position)
    if (--remaining === 0) return
  }
}

const serialize = (record: XoRecord): string => JSON.stringify(record)

export function recordBytes(cache: JsonCache, record: XoRecord): Buffer {
  return cache.bytes(record, 'record', serialize)
}

function* keep<T>(items: Iterable<T>, onItem: (item: T) => void): Generator<T, void, undefined> {
  for (const item of items) {
    onItem(item)
    yield item
  }
}

/**
 * Chunks of listings streamed and not kept: up to the batch plus one record
 * (a larger chunk gets a buffer of its own), a few per heavy listing admitted.
 */
const listingChunks = new ChunkPool(2 * BATCH, 16)

/**
 * What a listing keeps: what the caller may read and the filter matches. The
 * filter is parsed before the first byte so that a syntax error still gets its 400.
 */
function visibleAndMatching(
  visible: ((record: XoRecord) => boolean) | undefined,
  filter: string | undefined,
): ((record: XoRecord) => boolean) | undefined {
  return both(visible, filter === undefined ? undefined : compileFilter(filter))
}

function both(visible: ((record: XoRecord) => boolean) | undefined, matching: FilterPredicate | undefined): ((record: XoRecord) => boolean) | undefined {
  if (visible === undefined) return matching
  if (matching === undefined) return visible
  return (record) => matching(record) && visible(record)
}

/**
 * The texts a listing sends: of the whole collection, tested against the
 * whole filter, or, for a large collection whose filter has a term the index
 * answers, of the records that term keeps, tested against the rest.
 */
function selectedTexts(
  source: CollectionSource,
  index: ListingIndex | undefined,
  version: string,
  visible: ((record: XoRecord) => boolean) | undefined,
  plan: FilterPlan | undefined,
  query: CollectionQueryValue,
  cache: JsonCache,
): Iterable<Buffer> {
  const candidates = plan === undefined || index === undefined ? undefined : index.candidates(version, () => source.list(), plan.terms)
  if (candidates === undefined) return listingTexts(source, source.list(), query, both(visible, plan?.predicate), cache)
  const { variant, textOf } = textVariant(source, query, cache)
  return candidateTexts(candidates, candidates.textAt(variant, textOf), query, visible)
}

/** The answers of a listing route whose objects have this schema. */
export function listingResponses(schema: TObject): Readonly<Record<number, ResponseSpec>> {
  return {
    200: {
      description: 'Hrefs without `fields`; objects with `fields` (plus `href`); one value a line with `ndjson`',
      schema: Type.Union([Type.Array(Type.String()), Type.Array(Type.Partial(schema))]),
    },
    ...ErrorResponses,
  }
}

/**
 * Some records of a collection (a role's privileges, a group's roles) with the
 * collection parameters. Never cached: such lists are short and their keys many.
 */
export async function sendSubListing(
  res: ServerResponse,
  source: CollectionSource,
  records: Iterable<XoRecord>,
  q: CollectionQueryValue,
  { cache, principal }: { cache: JsonCache; principal: Principal },
): Promise<void> {
  const predicate = visibleAndMatching(readableBy(principal, source.resource), q.filter)
  await streamChunks(res, 200, q.ndjson === true ? NDJSON_TYPE : JSON_TYPE, framed(listingTexts(source, records, q, predicate, cache), q.ndjson === true))
}

/** GET /rest/v0/<name> and GET /rest/v0/<name>/:id for one source. */
export function readRoutes(source: CollectionSource, options: ListingOptions): RouteDef[] {
  const { cache, listings, versions } = options
  const versionTypes = source.versionTypes ?? [source.type]
  const tag = source.name
  const schema: TObject = source.schema
  const index = new ListingIndex()
  const routes = [
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}`,
      operationId: `list-${source.name}`,
      summary: `List ${source.name}`,
      tags: [tag],
      access: { ...privilegeOn(source, 'read'), listing: true },
      query: CollectionQuery,
      responses: listingResponses(schema),
      handler: async (ctx) => {
        const { res, query: q, principal } = ctx
        // HEAD is answered by this GET route: it gets a listing's headers, never a stream that would not end.
        if (q.watch === true && ctx.req.method !== 'HEAD' && options.watch !== undefined) return options.watch(source, q, ctx)
        const contentType = q.ndjson === true ? NDJSON_TYPE : JSON_TYPE
        const visible = readableBy(principal, source.resource)
        // A listing is the caller's: keyed by the scope it was filtered with.
        const scope = visible === undefined ? null : (principal.privileges?.key ?? principal.id)
        const key = JSON.stringify([source.name, scope, q.fields ?? null, q.filter ?? null, q.limit ?? null, q.ndjson === true])
        const cachedNow = listings.get(key, versions.of(versionTypes))
        if (cachedNow !== undefined && cachedNow.length < LARGE_CACHED_BODY) {
          sendJsonBytes(res, 200, cachedNow, contentType)
          return
        }
        const plan = q.filter === undefined ? undefined : planFilter(q.filter)
        const large = (source.size?.() ?? 0) >= HEAVY_LISTING_RECORDS
        const heavy = options.heavy !== undefined && (cachedNow !== undefined || large) ? options.heavy : undefined
        const release = heavy === undefined ? undefined : await heavy.admit(res)
        const turn = heavy === undefined ? undefined : () => heavy.turn()
        try {
          // Waiting for a turn may have seen a change: the cache is asked again.
          const version = versions.of(versionTypes)
          const cached = listings.current(key, version)
          if (cached !== undefined) {
            if (turn === undefined) sendJsonBytes(res, 200, cached, contentType)
            else await sendLargeBody(res, 200, cached, contentType, turn)
            return
          }
          const texts = selectedTexts(source, large ? index : undefined, version, visible, plan, q, cache)
          // The body to keep, if any, is one buffer of the size this query's last body had, made at once and filled
          // as the pool's chunks go out: chunks kept and then joined made a listing's bytes three times over, each
          // buffer more external memory for V8 to count towards a full collection. Between batches the stream
          // waits for the socket and its turn: only a body that saw no change, and came out at that size, is stored.
          const expected = listings.keeping(key)
          let body = expected === undefined ? undefined : Buffer.allocUnsafeSlow(expected)
          let size = 0
          const complete = await streamChunks(
            res,
            200,
            contentType,
            keep(framed(texts, q.ndjson === true, listingChunks), (chunk) => {
              if (body !== undefined && size + chunk.length <= body.length && versions.of(versionTypes) === version) body.set(chunk, size)
              else body = undefined
              size += chunk.length
            }),
            turn,
            (chunk) => listingChunks.release(chunk),
          )
          if (!complete) return
          listings.sent(key, size)
          if (body !== undefined && size === body.length && versions.of(versionTypes) === version) listings.set(key, version, body)
        } finally {
          release?.()
        }
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}/:id`,
      operationId: `get-${source.name}`,
      summary: `Get one object of ${source.name}`,
      tags: [tag],
      access: { ...privilegeOn(source, 'read'), ...(source.selfReadable ? { self: { param: 'id' } } : {}) },
      params: Type.Object({ id: Type.String() }),
      responses: { 200: { description: 'The whole record', schema }, ...ErrorResponses },
      handler: ({ res, params, principal }) => {
        sendJsonBytes(res, 200, recordBytes(cache, resolveTarget(source, params.id, principal, 'read')))
      },
    }),
  ]
  return options.single === false ? routes.slice(0, 1) : routes
}
