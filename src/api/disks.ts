import { Type } from '@sinclair/typebox'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { diskSize } from '../driver/disk-size.js'
import parseRangeHeader from 'range-parser'
import type { DiskAccess, XoRecord } from '../driver/types.js'
import { visibly, type DriverIndex } from '../driver/visible.js'
import { KeelError, noSuchObject } from '../errors.js'
import { exportRaw, exportVhd, exportVhdDelta, type DiskStream } from '../disks/export.js'
import { importDisk, importNewDisk, type DiskFormat } from '../disks/import.js'
import { transferTask } from '../disks/transfer.js'
import type { ByteRange } from '../formats/raw/raw-encoder.js'
import { sendJson, sendNoContent } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema, ErrorResponses } from '../http/schemas.js'
import type { StreamPacer } from '../http/stream-pacer.js'
import { sendStream } from '../http/stream-reply.js'
import { discardRestOfRequest } from '../http/drain-request.js'
import { uploadBody } from '../http/upload-body.js'
import type { TaskManager } from '../tasks/manager.js'
import { BASE } from './paths.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

export interface DiskRouteDeps {
  readonly disks: DiskAccess
  /** an import's task ends once this shows the disk it wrote or created */
  readonly index: DriverIndex
  readonly vdis: CollectionSource
  readonly snapshots: CollectionSource
  readonly srs: CollectionSource
  readonly tasks: TaskManager
  readonly clock: () => number
  readonly pacer: StreamPacer
}

const IdParams = Type.Object({ id: Type.String() })
const ExportQuery = Type.Object({
  nbdConcurrency: Type.Optional(Type.Integer({ description: 'blocks read in parallel, clamped to 1–8' })),
  preferNbd: Type.Optional(Type.Boolean({ description: 'accepted for compatibility: the lab reads its files directly' })),
})
const VhdExportQuery = Type.Object({
  ...ExportQuery.properties,
  base: Type.Optional(Type.String({ description: 'a snapshot of the disk: stream a differencing VHD of the blocks changed since it (incremental backup)' })),
})
const NewDiskQuery = Type.Object({
  name_label: Type.Optional(Type.String({ maxLength: 1024 })),
  name_description: Type.Optional(Type.String({ maxLength: 4096 })),
  raw: Type.Optional(Type.Boolean({ description: 'the body is raw bytes (Content-Length required: it is the disk size) instead of a VHD' })),
})
const CONTENT_TYPE: Readonly<Record<DiskFormat, string>> = { vhd: 'application/vhd', raw: 'application/octet-stream' }
const MAX_CONCURRENCY = 8

export const clampConcurrency = (value: number | undefined): number => Math.min(MAX_CONCURRENCY, Math.max(1, value ?? 1))

const rangeNotSatisfiable = (res: ServerResponse, size: number, header: string): KeelError => {
  res.setHeader('Content-Range', `bytes */${size}`)
  return new KeelError('RANGE_NOT_SATISFIABLE', `range ${header} is outside a disk of ${size} bytes`, { range: header, size })
}

const LONG_SUFFIX = /^bytes=-(\d+)$/

/**
 * One `bytes=` range (the form resuming downloaders send), as range-parser reads it. Several ranges,
 * another unit or a malformed header are answered whole, as RFC 9110 allows; a range wholly outside
 * the disk is refused.
 */
function parseRange(header: string | undefined, size: number, res: ServerResponse): ByteRange | undefined {
  if (header === undefined) return undefined
  const ranges = parseRangeHeader(size, header)
  if (ranges === -1) {
    // range-parser refuses a suffix longer than the disk; RFC 9110 §14.1.2 serves the whole disk then, as Keel always has.
    const suffix = LONG_SUFFIX.exec(header)
    if (suffix !== null && size > 0 && Number(suffix[1]) > size) return { start: 0, end: size }
    throw rangeNotSatisfiable(res, size, header)
  }
  const only = ranges !== -2 && ranges.type === 'bytes' && ranges.length === 1 ? ranges[0] : undefined
  return only === undefined ? undefined : { start: only.start, end: only.end + 1 }
}

export function declaredLength(req: IncomingMessage): number | undefined {
  const value = req.headers['content-length']
  return value === undefined ? undefined : Number(value)
}

/** The request body as a stream that a decoder may stop early (the refusal can still be answered); 100 Continue goes out on the first read. */
export const uploadOf = (req: IncomingMessage): AsyncIterable<Buffer> => uploadBody(req)

/** Reads an upload; a refusal first discards what the client still sends, so the answer reaches it. */
export async function receiving<T>(req: IncomingMessage, res: ServerResponse, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    await discardRestOfRequest(req, res)
    throw error
  }
}

/** `GET <collection>/:id.vhd|.raw` for VDIs and VDI snapshots, `PUT vdis/:id.vhd|.raw`, `POST srs/:id/vdis`. */
export function diskRoutes(deps: DiskRouteDeps): RouteDef[] {
  const exportTask = (source: CollectionSource, vdi: XoRecord, userId: string, format: string, stream: DiskStream, send: (bytes: AsyncIterable<Buffer>) => Promise<void>): Promise<void> =>
    transferTask(
      deps.tasks,
      { name: `REST API: export ${source.type} (${format})`, objectId: vdi.id, objectType: source.type, userId, type: 'xo:rest-api:export' },
      stream.length,
      (meter) => send(meter.count(stream.bytes)),
    )

  /** The base of an incremental export: a snapshot of the same disk the caller may export. */
  const baseOf = (vdi: XoRecord, id: string, principal: Parameters<typeof resolveTarget>[2]): XoRecord => {
    const base = resolveTarget(deps.snapshots, id, principal, 'export')
    const sameDisk = vdi.type === 'VDI' ? base.$snapshot_of === vdi.id : base.$snapshot_of === vdi.$snapshot_of
    if (!sameDisk || base.id === vdi.id) {
      throw new KeelError('INVALID_PARAMETERS', `${id} is not an earlier snapshot of ${vdi.type} ${vdi.id}`, { errors: [{ path: 'query.base', message: 'must be a snapshot of the same disk' }] })
    }
    return base
  }

  const exports = (source: CollectionSource, action: string): RouteDef[] => [
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}/:id.vhd`,
      operationId: `${source.name}-export-vhd`,
      summary: 'Export the disk as a dynamic VHD (exact Content-Length), or with `base` the blocks changed since that snapshot as a differencing VHD',
      tags: [source.name],
      idleTimeout: 'default',
      access: privilegeOn(source, action),
      params: IdParams,
      query: VhdExportQuery,
      responses: { 200: { description: 'VHD stream', contentType: CONTENT_TYPE.vhd }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const vdi = resolveTarget(source, params.id, principal, action)
        const options = { concurrency: clampConcurrency(query.nbdConcurrency), now: deps.clock() }
        const base = query.base === undefined ? undefined : baseOf(vdi, query.base, principal)
        const stream = base === undefined ? await exportVhd(deps.disks, vdi, diskSize(vdi), options) : await exportVhdDelta(deps.disks, vdi, base, diskSize(vdi), options)
        const headers = { 'Content-Disposition': `attachment; filename=${vdi.id}.vhd` }
        await exportTask(source, vdi, principal.id, 'vhd', stream, (bytes) =>
          sendStream(res, { status: 200, contentType: CONTENT_TYPE.vhd, length: stream.length, headers }, bytes, deps.pacer),
        )
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
      handler: async ({ req, res, params, query, principal }) => {
        const vdi = resolveTarget(source, params.id, principal, action)
        const size = diskSize(vdi)
        const range = parseRange(req.headers.range, size, res)
        const stream = await exportRaw(deps.disks, vdi, size, { concurrency: clampConcurrency(query.nbdConcurrency), now: deps.clock() }, range)
        const headers: Record<string, string> = { 'Accept-Ranges': 'bytes', 'Content-Disposition': `attachment; filename=${vdi.id}.raw` }
        if (range !== undefined) headers['Content-Range'] = `bytes ${range.start}-${range.end - 1}/${size}`
        try {
          await exportTask(source, vdi, principal.id, 'raw', stream, (bytes) =>
            sendStream(res, { status: range === undefined ? 200 : 206, contentType: CONTENT_TYPE.raw, length: stream.length, headers }, bytes, deps.pacer),
          )
        } finally {
          await stream.close()
        }
      },
    }),
  ]

  const importRoute = (format: DiskFormat): RouteDef =>
    defineRoute({
      method: 'PUT',
      path: `${BASE}/${deps.vdis.name}/:id.${format}`,
      operationId: `${deps.vdis.name}-import-${format}`,
      summary:
        format === 'vhd'
          ? "Replace the disk's content with a dynamic VHD of exactly its size, or apply a differencing VHD over it (atomic)"
          : "Replace the disk's content with raw bytes of exactly its size (atomic)",
      tags: [deps.vdis.name],
      idleTimeout: 'default',
      access: privilegeOn(deps.vdis, 'import-content'),
      params: IdParams,
      responses: { 204: { description: 'written and durable' }, ...BodyErrorResponses },
      handler: async ({ req, res, params, principal }) => {
        const vdi = resolveTarget(deps.vdis, params.id, principal, 'import-content')
        const length = declaredLength(req)
        await receiving(req, res, () =>
          transferTask(
            deps.tasks,
            { name: `REST API: import VDI content (${format})`, objectId: vdi.id, objectType: 'VDI', userId: principal.id, type: 'xo:rest-api:import' },
            length,
            (meter) => visibly(deps.index, () => importDisk(deps.disks, vdi, diskSize(vdi), format, meter.count(uploadOf(req)), length)),
          ),
        )
        sendNoContent(res)
      },
    })

  const createRoute = defineRoute({
    method: 'POST',
    path: `${BASE}/${deps.srs.name}/:id/vdis`,
    operationId: `${deps.srs.name}-import-vdi`,
    summary: 'Create a VDI on the SR from a VHD (default) or raw upload: 201 {id} with Location; nothing is created unless every byte arrives',
    tags: [deps.srs.name],
    idleTimeout: 'default',
    access: privilegeOn(deps.srs, 'import:vdi'),
    params: IdParams,
    query: NewDiskQuery,
    responses: { 201: { description: 'Created', schema: CreatedSchema }, 411: { description: 'a raw upload without Content-Length' }, ...BodyErrorResponses },
    handler: async ({ req, res, params, query, principal }) => {
      const sr = resolveTarget(deps.srs, params.id, principal, 'import:vdi')
      if (sr.type !== 'SR') throw noSuchObject(params.id, 'SR')
      const format: DiskFormat = query.raw === true ? 'raw' : 'vhd'
      const length = declaredLength(req)
      const names = { name_label: query.name_label ?? 'Imported disk', name_description: query.name_description ?? '' }
      const id = await receiving(req, res, () =>
        transferTask(
          deps.tasks,
          { name: `REST API: import VDI (${format})`, objectId: sr.id, objectType: 'SR', userId: principal.id, type: 'xo:rest-api:import' },
          length,
          (meter) => visibly(deps.index, () => importNewDisk(deps.disks, sr, names, format, meter.count(uploadOf(req)), principal.id, length)),
        ),
      )
      sendJson(res, 201, { id }, { Location: `${BASE}/${deps.vdis.name}/${id}` })
    },
  })

  return [...exports(deps.vdis, 'export-content'), ...exports(deps.snapshots, 'export'), importRoute('vhd'), importRoute('raw'), createRoute]
}
