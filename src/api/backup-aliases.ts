import { Type } from '@sinclair/typebox'
import type { XoRecord } from '../driver/types.js'
import { noSuchObject } from '../errors.js'
import type { JsonCache } from '../http/json-cache.js'
import { redirect, sendJsonBytes } from '../http/reply.js'
import { defineRoute, type RouteDef } from '../http/route.js'
import { ErrorResponses } from '../http/schemas.js'
import { BASE } from './paths.js'
import { CollectionQuery, listingResponses, recordBytes, sendSubListing } from './read.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

/**
 * The reference's older backup paths, still served there (deprecated):
 * `backup/jobs/{vm,metadata,mirror}`, `backup/logs` and `restore/logs`. Each
 * lists or reads the same records as `backup-jobs`, `backup-logs` and
 * `restore-logs`, with their hrefs; `backup/jobs/<id>` answers 308 to the VM
 * job's path, as there. Keel's jobs are all VM backups (type `backup`): the
 * metadata and mirror listings are empty.
 */
export interface BackupAliasDeps {
  readonly jobs: CollectionSource
  readonly logs: CollectionSource
  readonly restoreLogs: CollectionSource
  readonly cache: JsonCache
}

const JOB_KINDS: ReadonlyArray<readonly [segment: string, type: string]> = [
  ['vm', 'backup'],
  ['metadata', 'metadataBackup'],
  ['mirror', 'mirrorBackup'],
]

const deprecated = 'Deprecated path of the reference, kept for its clients: '
const ListingQuery = Type.Pick(CollectionQuery, ['fields', 'filter', 'limit', 'ndjson'])
const IdParams = Type.Object({ id: Type.String() })

export function backupAliasRoutes(deps: BackupAliasDeps): RouteDef[] {
  const { cache } = deps
  /** A listing and a single-object read under an older path, of the records `keep` accepts. */
  const alias = (path: string, source: CollectionSource, keep: (record: XoRecord) => boolean, notFoundType: string, now: string): RouteDef[] => [
    defineRoute({
      method: 'GET',
      path: `${BASE}/${path}`,
      operationId: `legacy-list-${path.replaceAll('/', '-')}`,
      summary: `${deprecated}${now}`,
      tags: [source.name],
      access: { ...privilegeOn(source, 'read'), listing: true },
      query: ListingQuery,
      responses: listingResponses(source.schema),
      handler: async ({ res, query, principal }) => {
        await sendSubListing(res, source, [...source.list()].filter(keep), query, { cache, principal })
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/${path}/:id`,
      operationId: `legacy-get-${path.replaceAll('/', '-')}`,
      summary: `${deprecated}${now}/<id>`,
      tags: [source.name],
      access: privilegeOn(source, 'read'),
      params: IdParams,
      responses: { 200: { description: 'The whole record', schema: source.schema }, ...ErrorResponses },
      handler: ({ res, params, principal }) => {
        const record = resolveTarget(source, params.id, principal, 'read')
        if (!keep(record)) throw noSuchObject(params.id, notFoundType)
        sendJsonBytes(res, 200, recordBytes(cache, record))
      },
    }),
  ]
  return [
    ...JOB_KINDS.flatMap(([segment, type]) => alias(`backup/jobs/${segment}`, deps.jobs, (job) => job.type === type, type, `GET /rest/v0/backup-jobs?filter=type:${type}`)),
    defineRoute({
      method: 'GET',
      path: `${BASE}/backup/jobs/:id`,
      operationId: 'legacy-redirect-backup-job',
      summary: `${deprecated}answers 308 to /rest/v0/backup/jobs/vm/<id>`,
      tags: [deps.jobs.name],
      access: { authenticated: true },
      params: IdParams,
      responses: { 308: { description: 'Permanent redirect to the VM backup job\'s older path' }, ...ErrorResponses },
      handler: ({ res, params }) => redirect(res, 308, `${BASE}/backup/jobs/vm/${encodeURIComponent(params.id)}`),
    }),
    ...alias('backup/logs', deps.logs, () => true, deps.logs.type, 'GET /rest/v0/backup-logs'),
    ...alias('restore/logs', deps.restoreLogs, () => true, deps.restoreLogs.type, 'GET /rest/v0/restore-logs'),
  ]
}
