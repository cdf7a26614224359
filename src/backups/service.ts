import { randomUUID } from 'node:crypto'
import { Cron } from 'croner'
import type { Created, DiskAccess, Driver, XoRecord } from '../driver/types.js'
import { visibly } from '../driver/visible.js'
import { incorrectState, invalidParameters, isKeelError, KeelError, noSuchObject } from '../errors.js'
import { importXva, type StreamWorkers } from '../disks/xva.js'
import type { EventBus } from '../events/bus.js'
import type { BackupArchive, BackupJob, BackupRepository, RestoreLog, Schedule } from '../model/backups.js'
import type { TaskManager } from '../tasks/manager.js'
import { serializeError } from '../tasks/record.js'
import { isZero } from '../formats/blocks.js'
import { archiveRecord, ArchiveIndex } from './archives.js'
import { formatBackupTimestamp, parseArchiveId } from './layout.js'
import type { BackupMetadata } from './metadata.js'
import { confineRepository } from './confine.js'
import { LocalRepository } from './repository.js'
import { BackupRunner, repositoryIdsOf } from './runner.js'
import { isOwnBackupSnapshot } from './snapshot-marks.js'
import { BackupStore } from './store.js'
import { fromXapiRecords } from './xapi-records.js'
import type { Db } from '../store/database.js'

export interface BackupServiceDeps {
  readonly db: Db
  readonly bus: EventBus
  readonly driver: Pick<Driver, 'perform' | 'destroy' | 'getObject' | 'objectsOfType' | 'update' | 'settled' | 'waitFor'>
  readonly disks: DiskAccess
  readonly tasks: TaskManager
  readonly workers: StreamWorkers
  readonly clock: () => number
  /** the folders repositories must be in (`[backups] repositoryRoots`) */
  readonly repositoryRoots: readonly string[]
  /** this installation's id: what its start-up sweep may touch carries it (src/installation.ts) */
  readonly installationId: string
  /** something went wrong in the background (a schedule that did not start, a repository that could not be cleaned) */
  readonly warn: (error: unknown, message: string, fields: Record<string, unknown>) => void
}

const MAX_BENCHMARKS = 50

/** Five fields, a zone the runtime knows: anything else is refused when written, not when it should fire. */
export function checkCron(cron: string, timezone: string | undefined): void {
  if (cron.trim().split(/\s+/).length !== 5) throw invalidParameters([{ path: 'body.cron', message: 'must have five fields: minute hour day-of-month month day-of-week' }])
  if (timezone !== undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: timezone })
    } catch {
      throw invalidParameters([{ path: 'body.timezone', message: `unknown time zone ${timezone}` }])
    }
  }
  try {
    new Cron(cron, { paused: true, ...(timezone === undefined ? {} : { timezone }) }).stop()
  } catch (error) {
    throw invalidParameters([{ path: 'body.cron', message: error instanceof Error ? error.message : String(error) }])
  }
}

/**
 * Backups as the service runs them: repositories (local folders in the
 * reference's layout), jobs, schedules firing while the service runs,
 * runs, archives, restores and their logs.
 */
export class BackupService {
  readonly store: BackupStore
  readonly archives: ArchiveIndex
  readonly #deps: BackupServiceDeps
  readonly #runner: BackupRunner
  readonly #crons = new Map<string, Cron>()

  constructor(deps: BackupServiceDeps) {
    this.#deps = deps
    this.store = new BackupStore(deps.db, deps.bus, deps.installationId)
    this.archives = new ArchiveIndex(deps.bus)
    this.#runner = new BackupRunner({
      store: this.store,
      driver: deps.driver,
      disks: deps.disks,
      tasks: deps.tasks,
      workers: deps.workers,
      clock: deps.clock,
      installationId: deps.installationId,
      open: (repository) => this.#open(repository),
      warn: deps.warn,
      changed: (ids) => {
        for (const id of ids) void this.refreshArchives(id).catch(() => {})
      },
    })
  }

  /**
   * After a restart: this installation's runs that were going on are
   * interrupted, their jobs idle again; snapshots its runs left (marked with
   * its id, not kept as a delta base) are removed; repositories are checked
   * and listed; schedules start. Another installation's runs and snapshots,
   * and the reference's, are left as they are.
   */
  async open(): Promise<void> {
    const { store } = this
    const { installationId } = this.#deps
    for (const type of ['backup-log', 'restore-log'] as const) {
      for (const log of store.list(type)) if (log.status === 'pending' && store.isOwnLog(type, log.id)) store.put({ ...log, status: 'interrupted', end: this.#deps.clock() })
    }
    for (const job of store.list('backup')) {
      // A job's runId names its run's log, which says whose run it is.
      if (job.runId === undefined || (store.get('backup-log', job.runId) !== undefined && !store.isOwnLog('backup-log', job.runId))) continue
      const { runId: _, ...idle } = job
      store.put(idle)
    }
    const kept = store.baseSnapshots()
    const orphans = [...this.#deps.driver.objectsOfType('VM-snapshot')].filter((snapshot) => isOwnBackupSnapshot(snapshot, installationId) && !kept.has(snapshot.id))
    for (const snapshot of orphans) await this.#deps.driver.destroy(snapshot, { signal: new AbortController().signal, userId: '', progress: () => {} })
    for (const repository of store.list('backup-repository')) {
      const checked = await this.#check(repository)
      if (checked.error === undefined) await this.#local(checked).then((local) => local.clean()).catch((error: unknown) => this.#deps.warn(error, 'a backup repository could not be cleaned', { repositoryId: checked.id }))
      await this.refreshArchives(repository.id).catch(() => {})
    }
    for (const schedule of store.list('schedule')) this.#arm(schedule)
  }

  close(): void {
    for (const cron of this.#crons.values()) cron.stop()
    this.#crons.clear()
    this.store.close()
  }

  // --- repositories

  /** The repository a record names, its folder found inside the roots now (a link may have changed since it was stored). */
  async #local(record: Pick<BackupRepository, 'url'>): Promise<LocalRepository> {
    const { repositoryRoots } = this.#deps
    return new LocalRepository(await confineRepository(record.url, repositoryRoots), repositoryRoots)
  }

  async #open(record: BackupRepository): Promise<LocalRepository> {
    const repository = await this.#local(record)
    const status = await repository.status()
    if (!status.ok) throw new KeelError('INCORRECT_STATE', `backup repository ${record.id} cannot be used: ${status.reason}`, { object: record.id, reason: status.reason })
    return repository
  }

  /** Records in the repository whether its folder can be used right now (one stored before the roots were, outside them, cannot). */
  async #check(record: BackupRepository): Promise<BackupRepository> {
    let reason: string | undefined
    try {
      const status = await (await this.#local(record)).status()
      if (!status.ok) reason = status.reason
    } catch (error) {
      if (!isKeelError(error)) throw error
      reason = error.message
    }
    const current = this.store.get('backup-repository', record.id) ?? record
    const { error: _, ...rest } = current
    const next: BackupRepository = reason === undefined ? rest : { ...rest, error: reason }
    return next.error === current.error ? current : this.store.put(next)
  }

  async createRepository(fields: { name: string; url: string; options?: string; proxy?: string }): Promise<string> {
    await confineRepository(fields.url, this.#deps.repositoryRoots)
    const id = randomUUID()
    await this.#check(this.store.put({ id, type: 'backup-repository', ...fields, enabled: true, benchmarks: [] }))
    return id
  }

  async updateRepository(record: BackupRepository, patch: Partial<Pick<BackupRepository, 'enabled' | 'name' | 'options' | 'proxy' | 'url'>>): Promise<void> {
    if (patch.url !== undefined) await confineRepository(patch.url, this.#deps.repositoryRoots)
    await this.#check(this.store.put({ ...record, ...patch }))
    if (patch.url !== undefined) await this.refreshArchives(record.id).catch(() => this.archives.forget(record.id))
  }

  /** Forgets a repository no job writes to; its folder stays as it is. */
  forgetRepository(record: BackupRepository): void {
    const user = [...this.store.list('backup')].find((job) => repositoryIdsOf(job).includes(record.id))
    if (user !== undefined) throw new KeelError('FORBIDDEN', `backup repository ${record.id} is used by job ${user.id}`, { jobId: user.id })
    this.store.remove('backup-repository', record.id)
    this.archives.forget(record.id)
  }

  async benchmark(record: BackupRepository): Promise<{ success: true; readRate: number; writeRate: number }> {
    const { readRate, writeRate } = await (await this.#open(record)).benchmark()
    const current = this.store.get('backup-repository', record.id) ?? record
    this.store.put({ ...current, benchmarks: [...current.benchmarks, { readRate, writeRate, timestamp: this.#deps.clock() }].slice(-MAX_BENCHMARKS) })
    return { success: true, readRate, writeRate }
  }

  async health(record: BackupRepository): Promise<{ success: true }> {
    await this.#open(await this.#check(record))
    return { success: true }
  }

  /** Lists a repository's archives again (a listing that fails leaves the known ones). */
  async refreshArchives(repositoryId: string): Promise<void> {
    const record = this.store.get('backup-repository', repositoryId)
    if (record === undefined) return
    const entries = await (await this.#local(record)).listArchives()
    const records: BackupArchive[] = []
    const chains = new Map<string, string[]>()
    for (const { metadataPath, metadata } of entries) {
      const key = `${metadata.jobId}/${String((metadata.vm as Record<string, unknown>)['uuid'])}`
      const chain = metadata.mode === 'delta' && Object.values(metadata.isVhdDifferencing).some(Boolean) ? (chains.get(key) ?? []) : []
      const record = archiveRecord(repositoryId, metadataPath, metadata, chain)
      chains.set(key, [...chain, record.id])
      records.push(metadata.mode === 'delta' ? { ...record, chain: [...chain, record.id] } : record)
    }
    this.archives.replace(repositoryId, records)
  }

  // --- jobs and schedules

  createJob(fields: Omit<BackupJob, 'id' | 'type' | 'settings' | 'runId'> & { settings?: BackupJob['settings'] }): string {
    this.#checkRemotes(fields.remotes)
    const id = randomUUID()
    this.store.put({ ...fields, id, type: 'backup', settings: { '': {}, ...fields.settings } })
    return id
  }

  updateJob(job: BackupJob, patch: Partial<Omit<BackupJob, 'id' | 'type' | 'runId' | 'userId'>>): void {
    if (patch.remotes !== undefined) this.#checkRemotes(patch.remotes)
    this.store.put({ ...job, ...patch })
  }

  deleteJob(job: BackupJob): void {
    if (job.runId !== undefined) throw incorrectState({ actual: 'running', expected: 'idle', object: job.id, property: 'runId' })
    for (const schedule of [...this.store.list('schedule')]) if (schedule.jobId === job.id) this.deleteSchedule(schedule)
    this.store.remove('backup', job.id)
  }

  #checkRemotes(remotes: BackupJob['remotes']): void {
    for (const id of repositoryIdsOf({ remotes })) if (this.store.get('backup-repository', id) === undefined) throw invalidParameters([{ path: 'body.remotes', message: `no backup repository ${id}` }])
  }

  createSchedule(fields: Omit<Schedule, 'id' | 'type'>): string {
    if (this.store.get('backup', fields.jobId) === undefined) throw invalidParameters([{ path: 'body.jobId', message: `no backup job ${fields.jobId}` }])
    checkCron(fields.cron, fields.timezone)
    const id = randomUUID()
    this.#arm(this.store.put({ ...fields, id, type: 'schedule' }))
    return id
  }

  updateSchedule(schedule: Schedule, patch: Partial<Omit<Schedule, 'id' | 'type' | 'userId'>>): void {
    const next = { ...schedule, ...patch }
    if (patch.jobId !== undefined && this.store.get('backup', patch.jobId) === undefined) throw invalidParameters([{ path: 'body.jobId', message: `no backup job ${patch.jobId}` }])
    checkCron(next.cron, next.timezone)
    this.#arm(this.store.put(next))
  }

  deleteSchedule(schedule: Schedule): void {
    this.#crons.get(schedule.id)?.stop()
    this.#crons.delete(schedule.id)
    this.store.remove('schedule', schedule.id)
  }

  /** Fires an enabled schedule on time while the service runs; a run missed while it was down is not caught up. */
  #arm(schedule: Schedule): void {
    this.#crons.get(schedule.id)?.stop()
    this.#crons.delete(schedule.id)
    if (!schedule.enabled) return
    const cron = new Cron(schedule.cron, { ...(schedule.timezone === undefined ? {} : { timezone: schedule.timezone }), protect: true, unref: true }, () => {
      const current = this.store.get('schedule', schedule.id)
      const job = current === undefined ? undefined : this.store.get('backup', current.jobId)
      if (current === undefined || job === undefined) return
      try {
        this.#runner.start(job, current.id, current.userId ?? job.userId ?? '')
      } catch (error) {
        this.#deps.warn(error, 'a scheduled backup did not start', { scheduleId: current.id })
      }
    })
    this.#crons.set(schedule.id, cron)
  }

  /** Starts a run of a job (by a schedule, or directly); refused while it runs. */
  run(job: BackupJob, scheduleId: string | undefined, userId: string): { taskId: string; done: Promise<unknown> } {
    return this.#runner.start(job, scheduleId, userId)
  }

  // --- archives

  /** The archive, with its repository opened and its metadata read again (it may have changed since listed). */
  async #archive(archive: BackupArchive): Promise<{ repository: LocalRepository; metadataPath: string; metadata: BackupMetadata }> {
    const parsed = parseArchiveId(archive.id)
    const record = this.store.get('backup-repository', archive.backupRepository)
    if (parsed === undefined || record === undefined) throw noSuchObject(archive.id, 'backup-archive')
    const repository = await this.#open(record)
    const entry = (await repository.listArchives(parsed.vmUuid)).find((candidate) => candidate.metadataPath === parsed.metadataPath)
    if (entry === undefined) throw noSuchObject(archive.id, 'backup-archive')
    return { repository, metadataPath: parsed.metadataPath, metadata: entry.metadata }
  }

  async deleteArchive(archive: BackupArchive): Promise<void> {
    const { repository, metadataPath } = await this.#archive(archive)
    try {
      await repository.deleteArchive(metadataPath)
    } finally {
      await this.refreshArchives(archive.backupRepository)
    }
  }

  /** Recreates the archive's VM on `sr` (a delta chain resolved to the archive's point), with a restore log. */
  async restore(archive: BackupArchive, sr: XoRecord, userId: string, progress: (percent: number) => void): Promise<Created> {
    const { store } = this
    const { clock } = this.#deps
    const start = clock()
    const log: RestoreLog = {
      id: store.logId('restore-log', start),
      type: 'restore-log',
      message: 'restore',
      data: { backupId: archive.id, jobId: archive.jobId, srId: sr.id, time: archive.timestamp },
      start,
      status: 'pending',
      tasks: [],
    }
    store.put(log)
    try {
      const { repository, metadataPath, metadata } = await this.#archive(archive)
      let id: string
      if (metadata.mode === 'full') {
        id = await importXva(this.#deps.disks, sr, await repository.openXva(metadataPath, metadata), userId, this.#deps.workers)
      } else {
        const { description, vdiRefs } = fromXapiRecords(metadata)
        const session = await this.#deps.disks.importVm(sr, description, userId)
        try {
          let written = 0
          const total = vdiRefs.length
          for (const [i, ref] of vdiRefs.entries()) {
            const disk = await repository.openDisk(metadataPath, metadata, ref)
            try {
              for (const index of disk.chain.allocatedBlocks()) {
                const data = await disk.chain.readBlock(index)
                if (!isZero(data)) await session.write(i, { index, data })
              }
            } finally {
              await disk.close()
            }
            progress((++written / total) * 100)
          }
        } catch (error) {
          await session.abort()
          throw error
        }
        id = (await session.commit()).id
      }
      // Named as the reference names restored VMs: the source VM's name and the archive's time, not the snapshot's name.
      const { driver } = this.#deps
      const restored = await driver.waitFor(id)
      await visibly(driver, () => driver.update(restored, { nameLabel: `${String(metadata.vm['name_label'] ?? restored.name_label)} (${formatBackupTimestamp(metadata.timestamp)})` }))
      store.put({ ...log, status: 'success', end: clock(), tasks: [{ id: `${log.id}:0`, message: 'transfer', start, end: clock(), status: 'success', result: { id, size: archive.size } }], result: { id } })
      return { id, type: 'VM' }
    } catch (error) {
      store.put({ ...log, status: 'failure', end: clock(), result: serializeError(error) })
      throw error
    }
  }
}
