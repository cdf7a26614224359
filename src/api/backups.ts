import type { ServerResponse } from 'node:http'
import { Type } from '@sinclair/typebox'
import { requirePrivilege, requireUpdates } from '../acl/check.js'
import type { Principal } from '../auth/principal.js'
import type { BackupService } from '../backups/service.js'
import { selectVms } from '../backups/vm-pattern.js'
import type { Driver, XoRecord } from '../driver/types.js'
import { invalidParameters, noSuchObject } from '../errors.js'
import type { JsonCache } from '../http/json-cache.js'
import { sendJson, sendNoContent } from '../http/reply.js'
import { defineRoute, type ResponseSpec, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, CreatedSchema, ErrorBodySchema, ErrorResponses } from '../http/schemas.js'
import {
  BackupArchiveSchema,
  BackupJobSchema,
  BackupLogSchema,
  BackupRepositorySchema,
  CreateJobBody,
  CreateRepositoryBody,
  CreateScheduleBody,
  RestoreLogSchema,
  RestoreParams,
  ScheduleSchema,
  UpdateJobBody,
  UpdateRepositoryBody,
  UpdateScheduleBody,
  type BackupArchive,
  type BackupJob,
  type BackupLog,
  type BackupRepository,
  type RestoreLog,
  type Schedule,
} from '../model/backups.js'
import type { TaskManager } from '../tasks/manager.js'
import { BASE } from './paths.js'
import { CollectionQuery, sendSubListing } from './read.js'
import { privilegeOn, type CollectionSource } from './sources.js'
import { resolveTarget } from './target.js'

interface BackupCollections {
  readonly repositories: CollectionSource<BackupRepository>
  readonly jobs: CollectionSource<BackupJob>
  readonly schedules: CollectionSource<Schedule>
  readonly logs: CollectionSource<BackupLog>
  readonly restoreLogs: CollectionSource<RestoreLog>
  readonly archives: CollectionSource<BackupArchive>
}

/** The backup collections, each typed by its records; archives list only with `backup-repository` (their own routes below). */
function backupCollections(backups: BackupService): BackupCollections {
  const { store, archives } = backups
  return {
    repositories: { name: 'backup-repositories', type: 'backup-repository', resource: 'backup-repository', schema: BackupRepositorySchema, list: () => store.list('backup-repository'), get: (id) => store.get('backup-repository', id) },
    jobs: { name: 'backup-jobs', type: 'backup', resource: 'backup-job', schema: BackupJobSchema, list: () => store.list('backup'), get: (id) => store.get('backup', id) },
    schedules: { name: 'schedules', type: 'schedule', resource: 'schedule', schema: ScheduleSchema, list: () => store.list('schedule'), get: (id) => store.get('schedule', id) },
    logs: { name: 'backup-logs', type: 'backup-log', resource: 'backup-log', schema: BackupLogSchema, list: () => store.list('backup-log'), get: (id) => store.get('backup-log', id) },
    restoreLogs: { name: 'restore-logs', type: 'restore-log', resource: 'restore-log', schema: RestoreLogSchema, list: () => store.list('restore-log'), get: (id) => store.get('restore-log', id) },
    archives: { name: 'backup-archives', type: 'xo-vm-backup', resource: 'backup-archive', schema: BackupArchiveSchema, list: () => archives.list(), get: (id) => archives.get(id) },
  }
}

export function backupSources(backups: BackupService): CollectionSource[] {
  return Object.values(backupCollections(backups))
}

export interface BackupRouteDeps {
  readonly backups: BackupService
  readonly sources: ReadonlyMap<string, CollectionSource>
  readonly driver: Pick<Driver, 'getObject' | 'objectsOfType'>
  readonly tasks: TaskManager
  readonly cache: JsonCache
}

const IdParams = Type.Object({ id: Type.String() })
const SyncQuery = Type.Object({ sync: Type.Optional(Type.Boolean({ description: 'Wait for the end: the route’s own answer, or the error' })) })
const TaskAccepted = Type.Object({ taskId: Type.String() })
const Benchmark = Type.Object({ success: Type.Boolean(), readRate: Type.Number(), writeRate: Type.Number() })
const accepted = { description: 'Accepted: follow the task at Location', schema: TaskAccepted }
/** What a route naming a repository's folder may also answer. */
const outsideRoots = { 403: { description: 'Not enough privileges; or `REPOSITORY_OUTSIDE_ROOTS`: the folder, links resolved, is not under `[backups] repositoryRoots`', schema: ErrorBodySchema } }

function source(deps: BackupRouteDeps, name: string): CollectionSource {
  const found = deps.sources.get(name)
  if (found === undefined) throw new Error(`no collection ${name}`)
  return found
}

/** Repositories, jobs, schedules, archives and restores: writes and actions (reads come from the collection routes). */
export function backupRoutes(deps: BackupRouteDeps): RouteDef[] {
  const { backups, tasks } = deps
  const { repositories, jobs, schedules, archives } = backupCollections(backups)
  const repository = (id: string, principal: Principal, action: string): BackupRepository => resolveTarget(repositories, id, principal, action)
  const job = (id: string, principal: Principal, action: string): BackupJob => resolveTarget(jobs, id, principal, action)
  const schedule = (id: string, principal: Principal, action: string): Schedule => resolveTarget(schedules, id, principal, action)
  const archive = (id: string, principal: Principal, action: string): BackupArchive => resolveTarget(archives, id, principal, action)

  /** What every creation route shares; each gives its own body schema, so its handler's body is typed from it. */
  const creation = (collection: CollectionSource, summary: string, refusals: Readonly<Record<number, ResponseSpec>> = {}) =>
    ({
      method: 'POST',
      path: `${BASE}/${collection.name}`,
      operationId: `create-${collection.name}`,
      summary,
      tags: [collection.name],
      access: privilegeOn(collection, 'create'),
      bodyRequired: true,
      responses: { 201: { description: 'Created (Location points at it)', schema: CreatedSchema }, ...BodyErrorResponses, ...refusals },
    }) as const

  /** The caller may create this very object; 201 with its id and Location. */
  const created = async (res: ServerResponse, collection: CollectionSource, principal: Principal, body: object, make: () => Promise<string> | string): Promise<void> => {
    if (collection.resource !== undefined) requirePrivilege(principal, collection.resource, 'create', body)
    const id = await make()
    sendJson(res, 201, { id }, { Location: `${BASE}/${collection.name}/${id}` })
  }

  /** A run answers 202 with the run's own task; with sync, 204 once it ended well, or the error it ended with. */
  const runRoute = (collection: CollectionSource, start: (id: string, principal: Principal) => { taskId: string; done: Promise<unknown> }): RouteDef =>
    defineRoute({
      method: 'POST',
      path: `${BASE}/${collection.name}/:id/actions/run`,
      operationId: `${collection.name}-run`,
      summary: 'Run the backup job now',
      tags: [collection.name],
      access: privilegeOn(collection, 'run'),
      params: IdParams,
      query: SyncQuery,
      responses: { 202: accepted, 204: { description: 'sync=true: the run ended' }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const { taskId, done } = start(params.id, principal)
        if (query.sync !== true) {
          sendJson(res, 202, { taskId }, { Location: `${BASE}/tasks/${taskId}` })
          return
        }
        await done
        sendNoContent(res)
      },
    })

  return [
    defineRoute({
      ...creation(repositories, 'Create a backup repository (a local folder under one of `[backups] repositoryRoots`: `file:///path`)', outsideRoots),
      body: CreateRepositoryBody,
      handler: ({ res, body, principal }) => created(res, repositories, principal, body, () => backups.createRepository(body)),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${BASE}/${repositories.name}/:id`,
      operationId: `update-${repositories.name}`,
      summary: 'Change a backup repository',
      tags: [repositories.name],
      access: privilegeOn(repositories, 'read'),
      params: IdParams,
      body: UpdateRepositoryBody,
      bodyRequired: true,
      responses: { 204: { description: 'Done' }, ...BodyErrorResponses, ...outsideRoots },
      handler: async ({ res, params, body, principal }) => {
        const record = repository(params.id, principal, 'read')
        requireUpdates(principal, 'backup-repository', record, Object.keys(body))
        await backups.updateRepository(record, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/${repositories.name}/:id/health`,
      operationId: `${repositories.name}-health`,
      summary: 'Whether the repository can be written now',
      tags: [repositories.name],
      access: privilegeOn(repositories, 'read'),
      params: IdParams,
      responses: { 200: { description: 'Usable', schema: Type.Object({ success: Type.Boolean() }) }, ...ErrorResponses, ...outsideRoots },
      handler: async ({ res, params, principal }) => sendJson(res, 200, await backups.health(repository(params.id, principal, 'read'))),
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/${repositories.name}/:id/actions/benchmark`,
      operationId: `${repositories.name}-benchmark`,
      summary: 'Write and read a 10 MiB file: throughput in bytes/s (kept in `benchmarks`)',
      tags: [repositories.name],
      access: privilegeOn(repositories, 'benchmark'),
      params: IdParams,
      query: SyncQuery,
      responses: { 202: accepted, 200: { description: 'sync=true: the figures', schema: Benchmark }, ...ErrorResponses, ...outsideRoots },
      handler: async ({ res, params, query, principal }) => {
        const record = repository(params.id, principal, 'benchmark')
        const { task, done } = tasks.run({ name: 'REST API: benchmark backup-repository', objectId: record.id, objectType: 'backup-repository', userId: principal.id, type: 'xo:rest-api:action' }, () => backups.benchmark(record))
        if (query.sync === true) sendJson(res, 200, await done)
        else sendJson(res, 202, { taskId: task.id }, { Location: `${BASE}/tasks/${task.id}` })
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/${repositories.name}/:id/actions/forget`,
      operationId: `${repositories.name}-forget`,
      summary: 'Forget the repository (its folder is left as it is); 403 while a job writes to it',
      tags: [repositories.name],
      access: privilegeOn(repositories, 'forget'),
      params: IdParams,
      query: SyncQuery,
      responses: { 202: accepted, 204: { description: 'sync=true: forgotten' }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const record = repository(params.id, principal, 'forget')
        // Checked before the task: a repository in use is refused with 403, as the reference does.
        backups.forgetRepository(record)
        const { task } = tasks.run({ name: 'REST API: forget backup-repository', objectId: record.id, objectType: 'backup-repository', userId: principal.id, type: 'xo:rest-api:action' }, async () => undefined)
        if (query.sync === true) sendNoContent(res)
        else sendJson(res, 202, { taskId: task.id }, { Location: `${BASE}/tasks/${task.id}` })
      },
    }),

    defineRoute({
      ...creation(jobs, 'Create a backup job'),
      body: CreateJobBody,
      handler: ({ res, body, principal }) => created(res, jobs, principal, body, () => backups.createJob({ ...body, userId: principal.id })),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${BASE}/${jobs.name}/:id`,
      operationId: `update-${jobs.name}`,
      summary: 'Change a backup job',
      tags: [jobs.name],
      access: privilegeOn(jobs, 'read'),
      params: IdParams,
      body: UpdateJobBody,
      bodyRequired: true,
      responses: { 204: { description: 'Done' }, ...BodyErrorResponses },
      handler: async ({ res, params, body, principal }) => {
        const record = job(params.id, principal, 'read')
        requireUpdates(principal, 'backup-job', record, Object.keys(body))
        backups.updateJob(record, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/${jobs.name}/:id`,
      operationId: `delete-${jobs.name}`,
      summary: 'Delete a backup job and its schedules (409 while it runs); its archives stay',
      tags: [jobs.name],
      access: privilegeOn(jobs, 'delete'),
      params: IdParams,
      responses: { 204: { description: 'Deleted' }, ...ErrorResponses },
      handler: ({ res, params, principal }) => {
        backups.deleteJob(job(params.id, principal, 'delete'))
        sendNoContent(res)
      },
    }),
    runRoute(jobs, (id, principal) => backups.run(job(id, principal, 'run'), undefined, principal.id)),
    defineRoute({
      method: 'GET',
      path: `${BASE}/vms/:id/backup-jobs`,
      operationId: 'vms-backup-jobs',
      summary: 'The backup jobs whose pattern selects this VM',
      tags: ['vms', jobs.name],
      access: privilegeOn(jobs, 'read'),
      params: IdParams,
      query: CollectionQuery,
      responses: { 200: { description: 'Hrefs, or objects with `fields`' }, ...ErrorResponses },
      handler: async ({ res, params, query, principal }) => {
        const vm = deps.driver.getObject(params.id)
        if (vm === undefined || vm.type !== 'VM') throw noSuchObject(params.id, 'VM')
        const selecting = [...backups.store.list('backup')].filter((candidate) => selectVms(candidate.vms, [vm]).length === 1)
        await sendSubListing(res, jobs, selecting, query, { cache: deps.cache, principal })
      },
    }),

    defineRoute({
      ...creation(schedules, 'Create a schedule for a backup job (five-field cron, optional time zone)'),
      body: CreateScheduleBody,
      handler: ({ res, body, principal }) => created(res, schedules, principal, body, () => backups.createSchedule({ ...body, enabled: body.enabled ?? true, name: body.name ?? '', userId: principal.id })),
    }),
    defineRoute({
      method: 'PATCH',
      path: `${BASE}/${schedules.name}/:id`,
      operationId: `update-${schedules.name}`,
      summary: 'Change a schedule',
      tags: [schedules.name],
      access: privilegeOn(schedules, 'read'),
      params: IdParams,
      body: UpdateScheduleBody,
      bodyRequired: true,
      responses: { 204: { description: 'Done' }, ...BodyErrorResponses },
      handler: ({ res, params, body, principal }) => {
        const record = schedule(params.id, principal, 'read')
        requireUpdates(principal, 'schedule', record, Object.keys(body))
        backups.updateSchedule(record, body)
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/${schedules.name}/:id`,
      operationId: `delete-${schedules.name}`,
      summary: 'Delete a schedule',
      tags: [schedules.name],
      access: privilegeOn(schedules, 'delete'),
      params: IdParams,
      responses: { 204: { description: 'Deleted' }, ...ErrorResponses },
      handler: ({ res, params, principal }) => {
        backups.deleteSchedule(schedule(params.id, principal, 'delete'))
        sendNoContent(res)
      },
    }),
    runRoute(schedules, (id, principal) => {
      const record = schedule(id, principal, 'run')
      const target = backups.store.get('backup', record.jobId)
      if (target === undefined) throw noSuchObject(record.jobId, 'backup')
      return backups.run(target, record.id, principal.id)
    }),

    defineRoute({
      method: 'GET',
      path: `${BASE}/${archives.name}`,
      operationId: `list-${archives.name}`,
      summary: 'Archives of the repositories named by `backup-repository` (repeatable, or `*` for all); empty without it',
      tags: [archives.name],
      access: { ...privilegeOn(archives, 'read'), listing: true },
      query: Type.Object({ ...CollectionQuery.properties, 'backup-repository': Type.Optional(Type.String()) }),
      responses: { 200: { description: 'Hrefs, or objects with `fields`' }, ...ErrorResponses },
      handler: async ({ req, res, query, principal }) => {
        const named = new URL(req.url ?? '/', 'http://keel').searchParams.getAll('backup-repository')
        const all = named.includes('*')
        const wanted = all ? [...backups.store.list('backup-repository')].map((record) => record.id) : named
        // A repository that cannot be listed is skipped, as the reference does: the others still answer.
        await Promise.all(wanted.map((id) => backups.refreshArchives(id).catch(() => {})))
        const records = named.length === 0 ? [] : backups.archives.list(new Set(wanted))
        await sendSubListing(res, archives, records, query, { cache: deps.cache, principal })
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/${archives.name}/:id`,
      operationId: `get-${archives.name}`,
      summary: 'One archive (percent-encode its id: it contains slashes)',
      tags: [archives.name],
      access: privilegeOn(archives, 'read'),
      params: IdParams,
      responses: { 200: { description: 'The archive', schema: BackupArchiveSchema }, ...ErrorResponses },
      handler: async ({ res, params, principal }) => {
        await refreshFor(params.id)
        sendJson(res, 200, archive(params.id, principal, 'read'))
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/${archives.name}/:id`,
      operationId: `delete-${archives.name}`,
      summary: 'Delete an archive; a delta archive later ones depend on is merged into its child first',
      tags: [archives.name],
      access: privilegeOn(archives, 'delete'),
      params: IdParams,
      responses: { 204: { description: 'Deleted' }, ...ErrorResponses },
      handler: async ({ res, params, principal }) => {
        await refreshFor(params.id)
        await backups.deleteArchive(archive(params.id, principal, 'delete'))
        sendNoContent(res)
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/${archives.name}/:id/actions/restore`,
      operationId: `${archives.name}-restore`,
      summary: "Recreate the archive's VM on an SR (a delta chain resolved to this point): 202 {taskId}, or with sync 201 {id} and Location",
      tags: [archives.name],
      access: privilegeOn(archives, 'restore'),
      params: IdParams,
      query: SyncQuery,
      body: RestoreParams,
      responses: { 202: accepted, 201: { description: 'sync=true: the new VM', schema: CreatedSchema }, ...BodyErrorResponses },
      handler: async ({ res, params, query, body, principal }) => {
        await refreshFor(params.id)
        const target = archive(params.id, principal, 'restore')
        const sr = srFor(body?.sr, principal)
        const { task, done } = tasks.run(
          { name: 'REST API: restore backup-archive', objectId: target.id, objectType: 'xo-vm-backup', userId: principal.id, type: 'xo:backup:restore', params: { sr: sr.id } },
          (context) => backups.restore(target, sr, principal.id, (percent) => context.progress(percent)),
        )
        if (query.sync !== true) {
          sendJson(res, 202, { taskId: task.id }, { Location: `${BASE}/tasks/${task.id}` })
          return
        }
        const created = await done
        sendJson(res, 201, { id: created.id }, { Location: `${BASE}/vms/${created.id}` })
      },
    }),
  ]

  /** An archive not listed yet (a repository written by someone else) is looked for in its repository. */
  async function refreshFor(id: string): Promise<void> {
    if (backups.archives.get(id) !== undefined) return
    const repositoryId = id.split('/')[0] ?? ''
    if (backups.store.get('backup-repository', repositoryId) !== undefined) await backups.refreshArchives(repositoryId).catch(() => {})
  }

  /** The restore target: the SR named, which the caller may import VMs to, or the first pool's default SR. */
  function srFor(id: string | undefined, principal: Principal): XoRecord {
    const chosen = id ?? [...deps.driver.objectsOfType('pool')].map((pool) => pool.default_SR).find((sr): sr is string => typeof sr === 'string')
    if (chosen === undefined) throw invalidParameters([{ path: 'body.sr', message: 'no default SR: name one' }])
    return resolveTarget(source(deps, 'srs'), chosen, principal, 'import:vm')
  }
}
