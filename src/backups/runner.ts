import { diskSize } from '../driver/disk-size.js'
import type { DiskAccess, Driver, OperationContext, XoRecord } from '../driver/types.js'
import type { DiskBlock } from '../formats/blocks.js'
import { createdRecord, visibly } from '../driver/visible.js'
import { aborted, incorrectState, invalidParameters, isKeelError } from '../errors.js'
import { exportVhd, exportVhdDelta } from '../disks/export.js'
import { describeVm, writeXvaFile, type StreamWorkers, type XvaFile } from '../disks/xva.js'
import type { BackupJob, BackupLog, BackupRepository, LogStatus, LogTask } from '../model/backups.js'
import type { TaskContext, TaskManager } from '../tasks/manager.js'
import { serializeError } from '../tasks/record.js'
import { formatBackupTimestamp, vhdPath } from './layout.js'
import type { DeltaBackupMetadata, FullBackupMetadata } from './metadata.js'
import type { LocalRepository } from './repository.js'
import { oldEntries } from './retention.js'
import type { BackupStore, DeltaBase } from './store.js'
import { backupSnapshotMarks } from './snapshot-marks.js'
import { selectVms } from './vm-pattern.js'
import { toXapiRecords, vmRecord } from './xapi-records.js'

export interface RunnerDeps {
  readonly store: BackupStore
  readonly driver: Pick<Driver, 'perform' | 'destroy' | 'getObject' | 'objectsOfType' | 'settled'>
  readonly disks: DiskAccess
  readonly tasks: TaskManager
  readonly workers: StreamWorkers
  /** the repository a record names, ready to write, or the reason it is not */
  readonly open: (repository: BackupRepository) => Promise<LocalRepository>
  readonly clock: () => number
  /** marked on the snapshots runs take, so that only this installation's start removes them */
  readonly installationId: string
  /** archives were written or removed in these repositories */
  readonly changed: (repositoryIds: readonly string[]) => void
  readonly warn: (error: unknown, message: string, fields: Record<string, unknown>) => void
}

const DEFAULT_CONCURRENCY = 2

/**
 * Blocks read ahead per disk unless the job's `nbdConcurrency` says: two, so
 * the next block is read while the last one is encoded and written.
 */
const DEFAULT_READ_CONCURRENCY = 2

/** The snapshots a run takes are named as the reference names its own; their marks, not their names, say whose they are. */
const BACKUP_SNAPSHOT_PREFIX = '[XO Backup '

const snapshotName = (job: BackupJob, vm: XoRecord): string => `${BACKUP_SNAPSHOT_PREFIX}${job.name}] ${String(vm.name_label)}`

function context(userId: string, signal: AbortSignal): OperationContext {
  return { signal, userId, progress: () => {} }
}

export function repositoryIdsOf(job: Pick<BackupJob, 'remotes'>): string[] {
  const id = job.remotes.id
  return typeof id === 'string' ? [id] : id.__or
}

/**
 * A log's task tree, edited in place and stored at each state change (never
 * per byte). A step's start and end are committed unsynced: no answer reports
 * them, a run's interrupted log is marked so at the next start, and the run's
 * own states (`finish`) are synced commits that cover them. Synced, each
 * waited on the event loop behind the archives' write-back, every request
 * with it.
 */
class LogWriter {
  readonly #store: BackupStore
  #log: BackupLog & { tasks: LogTask[] }
  readonly #clock: () => number
  #next = 0

  constructor(store: BackupStore, log: BackupLog & { tasks: LogTask[] }, clock: () => number) {
    this.#store = store
    this.#log = log
    this.#clock = clock
  }

  get log(): BackupLog {
    return this.#log
  }

  save(synced: boolean): void {
    this.#store.put({ ...this.#log, tasks: structuredClone(this.#log.tasks) }, { synced })
  }

  start(parent: LogTask | undefined, message: string, data?: Record<string, unknown>): LogTask {
    const task: LogTask = { id: `${this.#log.id}:${this.#next++}`, message, start: this.#clock(), status: 'pending', ...(data === undefined ? {} : { data }) }
    if (parent === undefined) this.#log.tasks.push(task)
    else (parent.tasks ??= []).push(task)
    this.save(false)
    return task
  }

  end(task: LogTask, status: LogStatus, result?: unknown): void {
    task.status = status
    task.end = this.#clock()
    if (result !== undefined) task.result = result
    this.save(false)
  }

  finish(status: LogStatus, fields: Partial<BackupLog> = {}): void {
    this.#log = { ...this.#log, ...fields, status, end: this.#clock() }
    this.save(true)
  }

  /** Runs `work` as a node of the tree: success with its result, failure with the error. */
  async step<T>(parent: LogTask | undefined, message: string, data: Record<string, unknown> | undefined, work: (task: LogTask) => Promise<T>): Promise<T> {
    const task = this.start(parent, message, data)
    try {
      const result = await work(task)
      this.end(task, 'success', result === undefined ? undefined : result)
      return result
    } catch (error) {
      this.end(task, 'failure', serializeError(error))
      throw error
    }
  }
}

/** Counts source bytes read for a run's progress: reads go through here. */
function countingDisks(disks: DiskAccess, onBytes: (bytes: number) => void): DiskAccess {
  async function* counted(blocks: AsyncIterable<DiskBlock>): AsyncGenerator<DiskBlock> {
    for await (const block of blocks) {
      onBytes(block.data.length)
      yield block
    }
  }
  return {
    ...disks,
    allocation: (vdi) => disks.allocation(vdi),
    openRead: async (vdi) => {
      const read = await disks.openRead(vdi)
      return { ...read, blocks: (indexes, options) => counted(read.blocks(indexes, options)) }
    },
    changedBlocks: (vdi, base) => disks.changedBlocks(vdi, base),
    openWrite: (vdi, options) => disks.openWrite(vdi, options),
    importVdi: (sr, vdi, userId) => disks.importVdi(sr, vdi, userId),
    importVm: (sr, description, userId) => disks.importVm(sr, description, userId),
    readBlocks: (vdi, indexes, options) => counted(disks.readBlocks(vdi, indexes, options)),
  }
}

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items]
  const limit = concurrency <= 0 ? items.length : concurrency
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item)
    }),
  )
}

async function everyAsync<T>(items: readonly T[], test: (item: T) => Promise<boolean>): Promise<boolean> {
  for (const item of items) if (!(await test(item))) return false
  return true
}

/**
 * Runs backup jobs: each selected VM is snapshotted, exported to every
 * repository of the job (an XVA in full mode; per disk a full or
 * differencing VHD in delta mode), then old archives beyond the retention go.
 * One VM's failure does not stop the others. The run is a task (byte
 * progress) and a backup log (its tree of steps, stored at each change).
 */
export class BackupRunner {
  readonly #deps: RunnerDeps

  constructor(deps: RunnerDeps) {
    this.#deps = deps
  }

  /** Starts a run now; refused while the job runs. `done` gives the log once the run ended well, or its error. */
  start(job: BackupJob, scheduleId: string | undefined, userId: string): { taskId: string; done: Promise<BackupLog> } {
    const { store, clock, tasks } = this.#deps
    if (job.runId !== undefined) throw incorrectState({ actual: 'running', expected: 'idle', object: job.id, property: 'runId' })
    const start = clock()
    const logId = store.logId('backup-log', start)
    const log = new LogWriter(
      store,
      {
        id: logId,
        type: 'backup-log',
        message: 'backup',
        jobId: job.id,
        jobName: job.name,
        ...(scheduleId === undefined ? {} : { scheduleId }),
        start,
        status: 'pending',
        data: { mode: job.mode, reportWhen: 'failure' },
        tasks: [],
      },
      clock,
    )
    const { task, done } = tasks.run(
      { name: `backup job ${job.name}`, objectId: job.id, objectType: 'backup', userId, type: 'xo:backup:run', params: { logId } },
      // The run's task ends once the index no longer shows the snapshots it removed.
      (taskContext) => visibly(this.#deps.driver, () => this.#run(job, scheduleId, userId, log, taskContext)),
    )
    log.finish('pending', { taskId: task.id })
    store.put({ ...job, runId: logId })
    const idle = (): void => {
      const current = store.get('backup', job.id)
      if (current === undefined) return
      const { runId: _, ...rest } = current
      store.put(rest)
    }
    void done.then(idle, idle)
    const ended = done.then(() => log.log)
    // A caller that does not wait (a schedule, an async request) follows the task and the log instead.
    ended.catch(() => {})
    return { taskId: task.id, done: ended }
  }

  async #run(job: BackupJob, scheduleId: string | undefined, userId: string, log: LogWriter, taskContext: TaskContext): Promise<{ logId: string }> {
    const { store, driver } = this.#deps
    try {
      const repositories = repositoryIdsOf(job).map((id) => {
        const record = store.get('backup-repository', id)
        if (record === undefined) throw invalidParameters([{ path: 'remotes', message: `no backup repository ${id}` }])
        if (!record.enabled) throw invalidParameters([{ path: 'remotes', message: `backup repository ${id} is disabled` }])
        if (record.error !== undefined) throw invalidParameters([{ path: 'remotes', message: `backup repository ${id}: ${record.error}` }])
        return record
      })
      const opened = await Promise.all(repositories.map(async (record) => ({ record, repository: await this.#deps.open(record) })))
      const vms = selectVms(job.vms, driver.objectsOfType('VM'))
      if (vms.length === 0) {
        log.finish('skipped', { result: { message: 'no VMs match this pattern' } })
        return { logId: log.log.id }
      }
      log.finish('pending', { infos: [{ message: 'vms', data: { vms: vms.map((vm) => vm.id) } }] })
      let total = 0
      for (const vm of vms) for (const vdi of describeVm(vm, (id) => driver.getObject(id)).vdis) total += (await this.#deps.disks.allocation(vdi)).length * 2 * 1024 * 1024
      total *= opened.length
      let done = 0
      const disks = countingDisks(this.#deps.disks, (bytes) => {
        if (taskContext.signal.aborted) throw aborted('the backup run was stopped')
        done += bytes
        taskContext.bytes(done, total)
        if (total > 0) taskContext.progress(Math.min(99, (done / total) * 100))
      })
      const settings = job.settings[''] ?? {}
      const results: LogStatus[] = []
      await pool(vms, settings.concurrency ?? DEFAULT_CONCURRENCY, async (vm) => {
        results.push(await this.#backupVm(job, scheduleId, vm, opened, disks, log, userId, taskContext.signal))
      })
      const failed = results.some((status) => status === 'failure')
      log.finish(failed ? 'failure' : 'success')
      if (failed) throw incorrectState({ actual: 'failure', expected: 'success', object: job.id, property: 'backup of some VMs' })
      return { logId: log.log.id }
    } catch (error) {
      if (log.log.status === 'pending') log.finish('failure', { result: serializeError(error) })
      throw error
    } finally {
      this.#deps.changed(repositoryIdsOf(job))
    }
  }

  async #backupVm(
    job: BackupJob,
    scheduleId: string | undefined,
    vm: XoRecord,
    repositories: ReadonlyArray<{ record: BackupRepository; repository: LocalRepository }>,
    disks: DiskAccess,
    log: LogWriter,
    userId: string,
    signal: AbortSignal,
  ): Promise<LogStatus> {
    const { driver } = this.#deps
    const node = log.start(undefined, 'backup VM', { type: 'VM', id: vm.id, name_label: vm.name_label })
    let snapshot: XoRecord | undefined
    let keepSnapshot = false
    try {
      // The log keeps the snapshot's id (the reference's step result), not its record.
      const snapshotId = await log.step(node, 'snapshot', undefined, async () => {
        const created = await driver.perform(
          vm,
          'snapshot',
          { name_label: snapshotName(job, vm), other_config: backupSnapshotMarks(this.#deps.installationId, job, scheduleId, vm, this.#deps.clock()) },
          context(userId, signal),
        )
        if (created === undefined) throw new Error(`the snapshot of VM ${vm.id} was not created`)
        return created.id
      })
      snapshot = await createdRecord(driver, { id: snapshotId, type: 'VM-snapshot' })
      const taken = snapshot
      if (job.mode === 'full') {
        for (const { record, repository } of repositories) {
          await log.step(node, 'export', { id: record.id, type: 'remote', isFull: true }, (exportNode) => this.#fullExport(job, scheduleId, vm, taken, repository, disks, log, exportNode))
        }
      } else {
        keepSnapshot = await this.#deltaExport(job, scheduleId, vm, taken, repositories, disks, log, node)
      }
      log.end(node, 'success')
      return 'success'
    } catch (error) {
      // The log shows a client what failed; an unexpected error's cause is for the operator's log.
      if (!isKeelError(error)) this.#deps.warn(error, 'a VM backup failed', { jobId: job.id, vmId: vm.id })
      log.end(node, 'failure', serializeError(error))
      return 'failure'
    } finally {
      if (snapshot !== undefined && !keepSnapshot) await this.#destroy(snapshot, userId)
    }
  }

  async #destroy(snapshot: XoRecord, userId: string): Promise<void> {
    try {
      await this.#deps.driver.destroy(snapshot, context(userId, new AbortController().signal))
    } catch (error) {
      // Gone already (deleted by hand): nothing to clean.
      if (!isKeelError(error)) throw error
    }
  }

  /** A timestamp after every archive of the VM already in the repository, so names never collide. */
  async #timestamp(repository: LocalRepository, vmId: string): Promise<number> {
    const archives = await repository.listArchives(vmId)
    const last = archives.at(-1)?.metadata.timestamp ?? 0
    return Math.max(this.#deps.clock(), Math.floor(last / 1000) * 1000 + 1000)
  }

  async #fullExport(job: BackupJob, scheduleId: string | undefined, vm: XoRecord, snapshot: XoRecord, repository: LocalRepository, disks: DiskAccess, log: LogWriter, node: LogTask): Promise<void> {
    const lookup = (id: string): XoRecord | undefined => this.#deps.driver.getObject(id)
    const { description, vdis } = describeVm(snapshot, lookup)
    const timestamp = await this.#timestamp(repository, vm.id)
    const ts = formatBackupTimestamp(timestamp)
    const compression = job.compression === 'zstd' ? 'zstd' : job.compression === 'native' ? 'gzip' : 'none'
    const metadata: FullBackupMetadata = {
      jobId: job.id,
      mode: 'full',
      scheduleId: scheduleId ?? '',
      timestamp,
      version: '2.0.0',
      vm: vmRecord(describeVm(vm, lookup).description, String(vm.power_state)),
      vmSnapshot: vmRecord(description),
      xva: `./${ts}.xva`,
      size: 0,
      tags: [],
    }
    let md5: string | undefined
    const concurrency = job.settings['']?.nbdConcurrency ?? DEFAULT_READ_CONCURRENCY
    // The worker that encodes the archive writes it too: its bytes never come back to the main thread.
    const fill = (file: XvaFile): Promise<number> => writeXvaFile(disks, description, vdis, compression, this.#deps.workers, file, { concurrency, md5: (hex) => (md5 = hex) })
    await log.step(node, 'transfer', undefined, () => repository.writeFull(metadata, fill, () => md5))
    await this.#retain(job, scheduleId, vm, repository)
  }

  /** Archives of this job, schedule and mode beyond the retention go, oldest first (delta chains merge as they go). */
  async #retain(job: BackupJob, scheduleId: string | undefined, vm: XoRecord, repository: LocalRepository): Promise<void> {
    const keep = job.settings[scheduleId ?? '']?.exportRetention ?? job.settings['']?.exportRetention
    if (keep === undefined || keep <= 0) return
    const mine = (await repository.listArchives(vm.id)).filter(({ metadata }) => metadata.jobId === job.id && metadata.mode === job.mode && metadata.scheduleId === (scheduleId ?? ''))
    for (const old of oldEntries(keep, mine.map((entry) => ({ ...entry, timestamp: entry.metadata.timestamp })))) await repository.deleteArchive(old.metadataPath)
  }

  /**
   * Per disk, a differencing VHD of the blocks changed since the job's last
   * snapshot of the VM, or a full VHD on the first run, when the previous
   * archive or snapshot is gone, or every `fullInterval` runs. The new
   * snapshot is kept as the next base; returns whether it was.
   */
  async #deltaExport(
    job: BackupJob,
    scheduleId: string | undefined,
    vm: XoRecord,
    snapshot: XoRecord,
    repositories: ReadonlyArray<{ record: BackupRepository; repository: LocalRepository }>,
    disks: DiskAccess,
    log: LogWriter,
    node: LogTask,
  ): Promise<boolean> {
    const { driver, store } = this.#deps
    const lookup = (id: string): XoRecord | undefined => driver.getObject(id)
    const { description, vdis } = describeVm(snapshot, lookup)
    const previous = store.base(job.id, vm.id)
    const baseSnapshot = previous === undefined ? undefined : lookup(previous.snapshotId)
    const fullInterval = job.settings['']?.fullInterval ?? 0
    const forcedFull = previous === undefined || baseSnapshot === undefined || (fullInterval !== 0 && fullInterval <= previous.deltas + 1)
    const baseDisks = baseSnapshot === undefined ? [] : describeVm(baseSnapshot, lookup).vdis
    const timestamps: Record<string, number> = {}
    let anyFull = forcedFull
    for (const { record, repository } of repositories) {
      const timestamp = await this.#timestamp(repository, vm.id)
      const ts = formatBackupTimestamp(timestamp)
      const baseTimestamp = previous?.timestamps[record.id]
      // A base disk deleted from the repository since leaves nothing to build on: a full again.
      const baseKept =
        baseTimestamp !== undefined &&
        (await everyAsync(vdis, (vdi) => repository.hasDisk(vm.id, vhdPath(job.id, String(vdi.$snapshot_of ?? vdi.id), formatBackupTimestamp(baseTimestamp)))))
      const full = forcedFull || !baseKept
      anyFull ||= full
      const records = toXapiRecords(description, vdis.map((vdi) => String(vdi.$snapshot_of ?? vdi.id)), String(vdis[0]?.$SR ?? ''), vm.id)
      const metadata: Omit<DeltaBackupMetadata, 'size' | 'vhds' | 'isVhdDifferencing'> = {
        jobId: job.id,
        mode: 'delta',
        scheduleId: scheduleId ?? '',
        timestamp,
        version: '2.0.0',
        vm: vmRecord(describeVm(vm, lookup).description, String(vm.power_state)),
        vmSnapshot: records.vm,
        vdis: records.vdis,
        vbds: records.vbds,
        vifs: records.vifs,
        vtpms: [],
        tags: [],
      }
      await log.step(node, 'export', { id: record.id, type: 'remote', isFull: full }, (exportNode) =>
        log.step(exportNode, 'transfer', undefined, async () => {
          const streams = await Promise.all(
            vdis.map(async (vdi, i) => {
              const liveVdiUuid = String(vdi.$snapshot_of ?? vdi.id)
              const size = diskSize(vdi)
              const base = full ? undefined : baseDisks.find((candidate) => candidate.$snapshot_of === vdi.$snapshot_of)
              const options = { concurrency: job.settings['']?.nbdConcurrency ?? DEFAULT_READ_CONCURRENCY, now: this.#deps.clock() }
              const stream =
                base === undefined || baseTimestamp === undefined
                  ? await exportVhd(disks, vdi, size, options)
                  : await exportVhdDelta(disks, vdi, base, size, { ...options, parentName: `${formatBackupTimestamp(baseTimestamp)}.vhd` })
              return { vdiRef: Object.keys(records.vdis)[i] as string, liveVdiUuid, vhd: stream.bytes, differencing: base !== undefined && baseTimestamp !== undefined}
            }),
          )
          return repository.writeDelta(metadata, streams)
        }),
      )
      timestamps[record.id] = timestamp
      await this.#retain(job, scheduleId, vm, repository)
    }
    const next: DeltaBase = { snapshotId: snapshot.id, timestamps, deltas: anyFull ? 0 : (previous?.deltas ?? 0) + 1 }
    store.setBase(job.id, vm.id, next)
    if (baseSnapshot !== undefined) await this.#destroy(baseSnapshot, job.userId ?? '')
    return true
  }
}
