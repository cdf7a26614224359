import { Type, type Static } from '@sinclair/typebox'
import { UUID_PATTERN } from '../uuid.js'

/**
 * Backup objects as the REST API serves them, in the reference's shapes
 * (notes reference-backups.md §5), each with the `type` Keel's collections
 * key on. Fields Keel adds are marked so.
 */

const Name = Type.String({ minLength: 1, maxLength: 256 })
const Uuid = Type.String({ pattern: `^${UUID_PATTERN}$` })

export const BenchmarkSchema = Type.Object({ readRate: Type.Number(), writeRate: Type.Number(), timestamp: Type.Integer() })

export const BackupRepositorySchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('backup-repository'),
    name: Type.String(),
    url: Type.String({ description: '`file:///absolute/path` (a local folder) for the embedded repositories' }),
    enabled: Type.Boolean(),
    options: Type.Optional(Type.String()),
    proxy: Type.Optional(Type.String()),
    error: Type.Optional(Type.String({ description: 'why the repository cannot be used right now (missing or read-only folder)' })),
    benchmarks: Type.Array(BenchmarkSchema, { description: 'the last 50 benchmark results' }),
  },
  { $id: 'BackupRepository' },
)
export type BackupRepository = Static<typeof BackupRepositorySchema>

export const CreateRepositoryBody = Type.Object(
  { name: Name, url: Type.String({ minLength: 8, maxLength: 4096 }), options: Type.Optional(Type.String({ maxLength: 4096 })), proxy: Type.Optional(Type.String({ maxLength: 256 })) },
  { additionalProperties: false },
)
export const UpdateRepositoryBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    name: Type.Optional(Name),
    options: Type.Optional(Type.String({ maxLength: 4096 })),
    proxy: Type.Optional(Type.String({ maxLength: 256 })),
    url: Type.Optional(Type.String({ minLength: 8, maxLength: 4096 })),
  },
  { additionalProperties: false, minProperties: 1 },
)

/** `{id: "x"}` or `{id: {__or: [...]}}`: the repositories a job writes to. */
export const IdPatternSchema = Type.Object({ id: Type.Union([Type.String(), Type.Object({ __or: Type.Array(Type.String(), { minItems: 1, maxItems: 100 }) })]) })
export type IdPattern = Static<typeof IdPatternSchema>

export const JobSettingsSchema = Type.Object(
  {
    concurrency: Type.Optional(Type.Integer({ minimum: 0, maximum: 64, description: 'VMs backed up in parallel (0: all at once); default 2' })),
    exportRetention: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, description: 'archives kept per VM and repository; 0 writes none' })),
    fullInterval: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, description: 'delta mode: a full every this many runs (0: only the first)' })),
    nbdConcurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 8 })),
    timezone: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: true },
)

export const BackupJobSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('backup'),
    name: Type.String(),
    mode: Type.Union([Type.Literal('full'), Type.Literal('delta')]),
    compression: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('native'), Type.Literal('zstd')], { description: 'full mode: zstd, native (gzip) or none' })),
    remotes: IdPatternSchema,
    vms: Type.Record(Type.String(), Type.Unknown(), { description: 'a value-matcher pattern over VM records, evaluated at each run (`{id: …}`, or `{power_state, tags, $pool}` with `__or`/`__and`/`__not`)' }),
    settings: Type.Record(Type.String(), JobSettingsSchema, { description: "`''` is job-wide, then per schedule id" }),
    userId: Type.Optional(Type.String()),
    runId: Type.Optional(Type.String({ description: 'the running backup log, while a run is in progress' })),
  },
  { $id: 'BackupJob' },
)
export type BackupJob = Static<typeof BackupJobSchema>

const JobFields = {
  name: Name,
  mode: Type.Union([Type.Literal('full'), Type.Literal('delta')]),
  compression: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('native'), Type.Literal('zstd')])),
  remotes: IdPatternSchema,
  vms: Type.Record(Type.String(), Type.Unknown()),
  settings: Type.Optional(Type.Record(Type.String(), JobSettingsSchema)),
}
export const CreateJobBody = Type.Object(JobFields, { additionalProperties: false })
export const UpdateJobBody = Type.Partial(Type.Object(JobFields, { additionalProperties: false }), { additionalProperties: false, minProperties: 1 })

export const ScheduleSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('schedule'),
    jobId: Type.String(),
    cron: Type.String({ description: 'five fields: minute hour day-of-month month day-of-week' }),
    enabled: Type.Boolean(),
    name: Type.String(),
    timezone: Type.Optional(Type.String()),
    userId: Type.Optional(Type.String()),
  },
  { $id: 'Schedule' },
)
export type Schedule = Static<typeof ScheduleSchema>

const ScheduleFields = {
  jobId: Uuid,
  cron: Type.String({ minLength: 9, maxLength: 256 }),
  enabled: Type.Optional(Type.Boolean()),
  name: Type.Optional(Type.String({ maxLength: 256 })),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
}
export const CreateScheduleBody = Type.Object(ScheduleFields, { additionalProperties: false })
export const UpdateScheduleBody = Type.Partial(Type.Object(ScheduleFields, { additionalProperties: false }), { additionalProperties: false, minProperties: 1 })

export const LogStatusSchema = Type.Union(['pending', 'success', 'failure', 'skipped', 'interrupted'].map((status) => Type.Literal(status)))
export type LogStatus = 'pending' | 'success' | 'failure' | 'skipped' | 'interrupted'

/** A node of a log's task tree (`backup VM`, `snapshot`, `export`, `transfer`, …). */
export interface LogTask {
  id: string
  message: string
  data?: Record<string, unknown>
  start: number
  end?: number
  status: LogStatus
  result?: unknown
  tasks?: LogTask[]
}

const LogTaskSchema = Type.Recursive((self) =>
  Type.Object({
    id: Type.String(),
    message: Type.String(),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    start: Type.Integer(),
    end: Type.Optional(Type.Integer()),
    status: LogStatusSchema,
    result: Type.Optional(Type.Unknown()),
    tasks: Type.Optional(Type.Array(self)),
  }),
  { $id: 'BackupLogTask' },
)

export const BackupLogSchema = Type.Object(
  {
    id: Type.String({ description: 'the start time in ms, as a string' }),
    type: Type.Literal('backup-log'),
    message: Type.Literal('backup'),
    jobId: Type.String(),
    jobName: Type.String(),
    scheduleId: Type.Optional(Type.String()),
    start: Type.Integer(),
    end: Type.Optional(Type.Integer()),
    status: LogStatusSchema,
    data: Type.Record(Type.String(), Type.Unknown()),
    infos: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
    tasks: Type.Optional(Type.Array(LogTaskSchema)),
    result: Type.Optional(Type.Unknown()),
    taskId: Type.Optional(Type.String({ description: 'Keel: the task of the run, with its byte progress' })),
  },
  { $id: 'BackupLog' },
)
export type BackupLog = Static<typeof BackupLogSchema> & { tasks?: LogTask[] }

export const RestoreLogSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('restore-log'),
    message: Type.Literal('restore'),
    data: Type.Object({ backupId: Type.String(), jobId: Type.String(), srId: Type.String(), time: Type.Integer() }),
    start: Type.Integer(),
    end: Type.Optional(Type.Integer()),
    status: LogStatusSchema,
    tasks: Type.Optional(Type.Array(LogTaskSchema)),
    result: Type.Optional(Type.Unknown()),
  },
  { $id: 'RestoreLog' },
)
export type RestoreLog = Static<typeof RestoreLogSchema> & { tasks?: LogTask[] }

export const BackupArchiveSchema = Type.Object(
  {
    id: Type.String({ description: '`<repository id>//xo-vm-backups/<vm uuid>/<timestamp>.json`: percent-encode it in paths' }),
    type: Type.Literal('xo-vm-backup'),
    backupRepository: Type.String(),
    disks: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), uuid: Type.String() })),
    jobId: Type.String(),
    mode: Type.Union([Type.Literal('full'), Type.Literal('delta')]),
    scheduleId: Type.String(),
    size: Type.Number(),
    timestamp: Type.Integer(),
    vm: Type.Object({ uuid: Type.String(), name_label: Type.String(), name_description: Type.String(), tags: Type.Array(Type.String()) }),
    tags: Type.Array(Type.String()),
    differencingVhds: Type.Optional(Type.Integer()),
    dynamicVhds: Type.Optional(Type.Integer()),
    withMemory: Type.Boolean(),
    chain: Type.Optional(Type.Array(Type.String(), { description: 'Keel, delta archives: the archives it depends on, oldest first, then itself' })),
  },
  { $id: 'BackupArchive' },
)
export type BackupArchive = Static<typeof BackupArchiveSchema>

export const RestoreParams = Type.Object({ sr: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'the SR for the restored disks (default: the pool default SR of the first pool)' })) }, { additionalProperties: false })
