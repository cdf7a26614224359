import { Type } from '@sinclair/typebox'
import type { DiskAccess, Driver, XoRecord } from '../driver/types.js'
import { createdRecord, visibly } from '../driver/visible.js'
import { immediate } from './changes.js'
import { invalidParameters, noSuchObject } from '../errors.js'
import { transferTask } from '../disks/transfer.js'
import { compressionOf, describeVm, exportXva, importXva, type StreamWorkers } from '../disks/xva.js'
import { sendJson } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema, ErrorResponses } from '../http/schemas.js'
import type { StreamPacer } from '../http/stream-pacer.js'
import { sendStream } from '../http/stream-reply.js'
import type { TaskManager } from '../tasks/manager.js'
import { clampConcurrency, declaredLength, receiving, uploadOf } from './disks.js'
import { BASE } from './paths.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

export interface VmStreamDeps {
  readonly driver: Pick<Driver, 'perform' | 'destroy' | 'getObject' | 'settled'>
  readonly disks: DiskAccess
  /** vms, vm-snapshots and vm-templates */
  readonly exportable: readonly CollectionSource[]
  readonly pools: CollectionSource
  readonly srs: CollectionSource
  readonly vms: CollectionSource
  readonly tasks: TaskManager
  readonly workers: StreamWorkers
  readonly pacer: StreamPacer
}

const IdParams = Type.Object({ id: Type.String() })
const XvaExportQuery = Type.Object({
  compress: Type.Optional(Type.String({ description: '`zstd` or `gzip` compress the whole archive; the deprecated `true` means gzip, `false` none' })),
  nbdConcurrency: Type.Optional(Type.Integer({ description: 'blocks read in parallel, clamped to 1–8' })),
})
const XvaImportQuery = Type.Object({ sr: Type.Optional(Type.String({ description: "the SR for the VM's disks (default: the pool's default SR)" })) })

/** A VM that runs is exported from a snapshot, as the reference does: its disks are not changing under the export then. */
const LIVE_STATES: ReadonlySet<unknown> = new Set(['Running', 'Paused'])

/** `GET vms|vm-snapshots|vm-templates/:id.xva`, `POST pools/:id/vms` (XVA import). */
export function vmStreamRoutes(deps: VmStreamDeps): RouteDef[] {
  /** Streams `vm`'s XVA from a snapshot taken for the purpose when it runs, removed however the stream ends. */
  async function streamVm(vm: XoRecord, userId: string, send: (vm: XoRecord) => Promise<void>): Promise<void> {
    if (vm.type !== 'VM' || !LIVE_STATES.has(vm.power_state)) return send(vm)
    const created = await deps.driver.perform(vm, 'snapshot', { name_label: `[XO Export] ${String(vm.name_label)}` }, immediate(userId))
    if (created === undefined) throw new Error(`the export snapshot of VM ${vm.id} was not created`)
    // Its disks are read through the index: they must be there, not only the snapshot's own record.
    const snapshot = await createdRecord(deps.driver, created)
    try {
      await send(snapshot)
    } finally {
      await visibly(deps.driver, () => deps.driver.destroy(snapshot, immediate(userId)))
    }
  }

  const exportRoute = (source: CollectionSource): RouteDef =>
    defineRoute({
      method: 'GET',
      path: `${BASE}/${source.name}/:id.xva`,
      operationId: `${source.name}-export-xva`,
      summary: 'Export as an XVA (a running VM from a snapshot removed afterwards); `compress` zstd or gzip',
      tags: [source.name],
      idleTimeout: 'default',
      access: privilegeOn(source, 'export'),
      params: IdParams,
      query: XvaExportQuery,
      responses: { 200: { description: 'XVA stream (no Content-Length: compressed sizes are not known beforehand)', contentType: 'application/octet-stream' }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const vm = resolveTarget(source, params.id, principal, 'export')
        const compression = compressionOf(query.compress)
        const concurrency = clampConcurrency(query.nbdConcurrency)
        await transferTask(
          deps.tasks,
          { name: `REST API: export ${source.type} (xva)`, objectId: vm.id, objectType: source.type, userId: principal.id, type: 'xo:rest-api:export' },
          undefined,
          (meter) =>
            streamVm(vm, principal.id, async (exported) => {
              const { description, vdis } = describeVm(exported, (id) => deps.driver.getObject(id))
              const bytes = exportXva(deps.disks, description, vdis, compression, deps.workers, { concurrency })
              const headers = { 'Content-Disposition': `attachment; filename=${vm.id}.xva` }
              await sendStream(res, { status: 200, contentType: 'application/octet-stream', headers }, meter.count(bytes), deps.pacer)
            }),
        )
      },
    })

  const importRoute = defineRoute({
    method: 'POST',
    path: `${BASE}/${deps.pools.name}/:id/vms`,
    operationId: `${deps.pools.name}-import-vm`,
    summary: "Import a VM from an XVA (plain, gzip or zstd) onto an SR of the pool: 201 {id} with Location; OVA is refused with 415",
    tags: [deps.pools.name],
    idleTimeout: 'default',
    access: { privilege: { resource: 'sr', action: 'import:vm' } },
    params: IdParams,
    query: XvaImportQuery,
    responses: { 201: { description: 'Created', schema: CreatedSchema }, 415: { description: 'an OVA archive' }, ...BodyErrorResponses },
    handler: async ({ req, res, params, query, principal }) => {
      const pool = deps.pools.get(params.id)
      if (pool === undefined) throw noSuchObject(params.id, deps.pools.type)
      const srId = query.sr ?? (typeof pool.default_SR === 'string' ? pool.default_SR : undefined)
      if (srId === undefined) throw invalidParameters([{ path: 'query.sr', message: `pool ${pool.id} has no default SR: name one` }])
      const sr = resolveTarget(deps.srs, srId, principal, 'import:vm')
      if (sr.$pool !== pool.id) throw invalidParameters([{ path: 'query.sr', message: `SR ${sr.id} is not in pool ${pool.id}` }])
      const id = await receiving(req, res, () =>
        transferTask(
          deps.tasks,
          { name: 'REST API: import VM (xva)', objectId: pool.id, objectType: 'pool', userId: principal.id, type: 'xo:rest-api:import' },
          declaredLength(req),
          (meter) => visibly(deps.driver, () => importXva(deps.disks, sr, meter.count(uploadOf(req)), principal.id, deps.workers)),
        ),
      )
      sendJson(res, 201, { id }, { Location: `${BASE}/${deps.vms.name}/${id}` })
    },
  })

  return [...deps.exportable.map(exportRoute), importRoute]
}
