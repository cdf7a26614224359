import { Type } from '@sinclair/typebox'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { DiskAccess, XoRecord } from '../driver/types.js'
import { KeelError } from '../errors.js'
import { exportRaw, exportVhd } from '../disks/export.js'
import { importDisk, type DiskFormat } from '../disks/import.js'
import type { ByteRange } from '../formats/raw/raw-encoder.js'
import { sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteContext, type RouteDef } from '../http/route.js'
import type { Principal } from '../auth/principal.js'
import { BodyErrorResponses, ErrorResponses } from '../http/schemas.js'
import { sendStream } from '../http/stream-reply.js'
import { discardRestOfRequest } from '../http/drain-request.js'
import { requestBody } from '../http/continue.js'
import { BASE } from './paths.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

export interface DiskRouteDeps {
  readonly disks: DiskAccess
  readonly vdis: CollectionSource
  readonly snapshots: CollectionSource
  readonly clock: () => number
}

const IdParams = Type.Object({ id: Type.String() })
type ExportQueryValue = { readonly nbdConcurrency?: number; readonly preferNbd?: boolean }
const ExportQuery = Type.Object({
  nbdConcurrency: Type.Optional(Type.Integer({ description: 'blocks read in parallel, clamped to 1–8' })),
  preferNbd: Type.Optional(Type.Boolean({ description: 'accepted for compatibility: the lab reads its files directly' })),
})
const CONTENT_TYPE: Readonly<Record<DiskFormat, string>> = { vhd: 'application/vhd', raw: 'application/octet-stream' }
const MAX_CONCURRENCY = 8

function sizeOf(vdi: XoRecord): number {
  const size = vdi.size
  if (typeof size !== 'number') throw new Error(`VDI ${vdi.id} has no size`)
  return size
}

const clampConcurrency = (value: number | undefined): number => Math.min(MAX_CONCURRENCY, Math.max(1, value ?? 1))

const rangeNotSatisfiable = (res: ServerResponse, size: number, header: string): KeelError => {
  res.setHeader('Content-Range', `bytes */${size}`)
  return new KeelError('RANGE_NOT_SATISFIABLE', `range ${header} is outside a disk of ${size} bytes`, { range: header, size })
}

/** One `bytes=` range (the form resuming downloaders send); several ranges are answered whole, as RFC 9110 allows. */
function parseRange(header: string | undefined, size: number, res: ServerResponse): ByteRange | undefined {
  if (header === undefined) return undefined
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return undefined
  const [, first = '', last = ''] = match
  if (first === '' && last === '') return undefined
  if (first === '') {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) throw rangeNotSatisfiable(res, size, header)
    return { start: Math.max(0, size - suffix), end: size }
  }
  const start = Number(first)
  const end = last === '' ? size : Math.min(size, Number(last) + 1)
  if (start >= size || end <= start) throw rangeNotSatisfiable(res, size, header)
  return { start, end }
}

function declaredLength(req: IncomingMessage): number | undefined {
  const value = req.headers['content-length']
  return value === undefined ? undefined : Number(value)
}

/** `GET <collection>/:id.vhd|.raw` for VDIs and VDI snapshots, `PUT vdis/:id.vhd|.raw`. */
export function diskRoutes(deps: DiskRouteDeps): RouteDef[] {
  const exports = (source: CollectionSource, action: string): RouteDef[] => [
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}/:id.vhd`,
      operationId: `${source.name}-export-vhd`,
      summary: 'Export the disk as a dynamic VHD (exact Content-Length)',
      tags: [source.name],
      idleTimeout: 'default',
      access: privilegeOn(source, action),
      params: IdParams,
      query: ExportQuery,
      responses: { 200: { description: 'VHD stream', contentType: CONTENT_TYPE.vhd }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }: RouteContext<{ id: string }, ExportQueryValue, undefined, Principal>) => {
        const vdi = resolveTarget(source, params.id, principal, action)
        const stream = await exportVhd(deps.disks, vdi, sizeOf(vdi), { concurrency: clampConcurrency(query.nbdConcurrency), now: deps.clock() })
        await sendStream(res, { status: 200, contentType: CONTENT_TYPE.vhd, length: stream.length }, stream.bytes)
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}/:id.raw`,
      operationId: `${source.name}-export-raw`,
      summary: 'Export the disk as raw bytes of exactly its virtual size; a Range resumes a broken download',
      tags: [source.name],
      idleTimeout: 'default',
      access: privilegeOn(source, action),
      params: IdParams,
      query: ExportQuery,
      responses: {
        200: { description: 'raw disk', contentType: CONTENT_TYPE.raw },
        206: { description: 'the requested range', contentType: CONTENT_TYPE.raw },
        416: { description: 'range outside the disk' },
        ...ErrorResponses,
      },
      handler: async ({ req, res, params, query, principal }: RouteContext<{ id: string }, ExportQueryValue, undefined, Principal>) => {
        const vdi = resolveTarget(source, params.id, principal, action)
        const size = sizeOf(vdi)
        const range = parseRange(req.headers.range, size, res)
        const stream = await exportRaw(deps.disks, vdi, size, { concurrency: clampConcurrency(query.nbdConcurrency), now: deps.clock() }, range)
        const headers: Record<string, string> = { 'Accept-Ranges': 'bytes' }
        if (range !== undefined) headers['Content-Range'] = `bytes ${range.start}-${range.end - 1}/${size}`
        await sendStream(res, { status: range === undefined ? 200 : 206, contentType: CONTENT_TYPE.raw, length: stream.length, headers }, stream.bytes)
      },
    }),
  ]
  const importRoute = (format: DiskFormat): RouteDef =>
    defineRoute({
      method: 'PUT',
      path: `${BASE}/${deps.vdis.name}/:id.${format}`,
      operationId: `${deps.vdis.name}-import-${format}`,
      summary: `Replace the disk's content with a ${format === 'vhd' ? 'VHD' : 'raw'} stream of exactly its size (atomic)`,
      tags: [deps.vdis.name],
      idleTimeout: 'default',
      access: privilegeOn(deps.vdis, 'import-content'),
      params: IdParams,
      responses: { 204: { description: 'written and durable' }, ...BodyErrorResponses },
      handler: async ({ req, res, params, principal }) => {
        const vdi = resolveTarget(deps.vdis, params.id, principal, 'import-content')
        try {
          await importDisk(deps.disks, vdi, sizeOf(vdi), format, requestBody(req), declaredLength(req))
        } catch (error) {
          await discardRestOfRequest(req, res)
          throw error
        }
        sendNoContent(res)
      },
    })
  return [...exports(deps.vdis, 'export-content'), ...exports(deps.snapshots, 'export'), importRoute('vhd'), importRoute('raw')]
}
