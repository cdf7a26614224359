import { selectVms } from '../backups/vm-pattern.js'
import type { XoRecord } from '../driver/types.js'
import type { BackupService } from '../backups/service.js'
import type { BackupArchive, BackupJob, BackupLog, BackupRepository, LogStatus, LogTask, Schedule } from '../model/backups.js'

/**
 * What the dashboards say about backups, as the reference's dashboard services
 * judge it: a job counts when a schedule of it is enabled, its last week of runs
 * says whether it failed, and a VM is protected when the last three runs of an
 * enabled job that selects it all backed it up.
 */

export interface BackupReads {
  jobs(): Iterable<BackupJob>
  schedules(): Iterable<Schedule>
  /** oldest first */
  logs(): Iterable<BackupLog>
  /** read anew from the repositories, as the reference lists them */
  archives(): Promise<readonly BackupArchive[]>
}

/** The reads of the backup service's records, with its repositories (the site dashboard sums them). */
export function backupReads(backups: BackupService): BackupReads & { repositories(): Iterable<BackupRepository> } {
  return {
    jobs: () => backups.store.list('backup'),
    schedules: () => backups.store.list('schedule'),
    logs: () => [...backups.store.list('backup-log')].sort((a, b) => a.start - b.start),
    archives: async () => {
      // The index follows the repositories' folders lazily: read them now, as the archive listing does.
      await Promise.all([...backups.store.list('backup-repository')].map((repository) => backups.refreshArchives(repository.id).catch(() => {})))
      return backups.archives.list()
    },
    repositories: () => backups.store.list('backup-repository'),
  }
}

type Finished = Exclude<LogStatus, 'pending'>
const DAY = 86_400_000

const hasEnabledSchedule = (reads: BackupReads, jobId: string): boolean => [...reads.schedules()].some((schedule) => schedule.jobId === jobId && schedule.enabled)

/** A VM is a replica when a backup job made it: its start is blocked and it carries the job's mark. */
export const isReplica = (vm: XoRecord): boolean =>
  'start' in ((vm['blockedOperations'] as object | undefined) ?? {}) && (vm['other'] as Record<string, unknown> | undefined)?.['xo:backup:job'] !== undefined

const noBackupTag = (vm: XoRecord): boolean => Array.isArray(vm['tags']) && vm['tags'].some((tag) => typeof tag === 'string' && tag.split('=', 1)[0] === 'xo:no-bak')

/** The run's own task for one VM, where it has one. */
const vmTaskOf = (log: BackupLog, vmId: string): Pick<LogTask, 'data'> & { status: string } | undefined => log.tasks?.find((task) => task.data?.['id'] === vmId)

/** The VM's outcome in a run: the run's when it succeeded as a whole, else its own task's. */
const vmStatusIn = (log: BackupLog, vmId: string): string | undefined => (log.status === 'success' ? 'success' : vmTaskOf(log, vmId)?.status)

function logsByJob(reads: BackupReads): Map<string, BackupLog[]> {
  const byJob = new Map<string, BackupLog[]>()
  for (const log of reads.logs()) {
    const list = byJob.get(log.jobId)
    if (list === undefined) byJob.set(log.jobId, [log])
    else list.push(log)
  }
  return byJob
}

export interface SiteBackups {
  jobs: { disabled: number; failed: number; noRecentRun: number; skipped: number; successful: number; total: number }
  issues: Array<{ logs: Finished[]; name: string; type: 'backup'; uuid: string }>
  vmsProtection: { protected: number; unprotected: number; notInJob: number }
}

export function siteBackups(reads: BackupReads, vms: readonly XoRecord[], now: number): SiteBackups | { isEmpty: true } {
  const jobs = [...reads.jobs()]
  if (jobs.length === 0) return { isEmpty: true }
  const candidates = vms.filter((vm) => !isReplica(vm))
  const byId = new Map(candidates.map((vm) => [vm.id, vm]))
  const protectedIds = new Set<string>()
  const unprotectedIds = new Set<string>()
  const mark = (vmId: string, isProtected: boolean): void => {
    const vm = byId.get(vmId)
    if (vm === undefined || protectedIds.has(vmId) || noBackupTag(vm)) return
    if (isProtected) {
      protectedIds.add(vmId)
      unprotectedIds.delete(vmId)
    } else unprotectedIds.add(vmId)
  }
  const weekStart = now - 7 * DAY
  const counts = { disabled: 0, failed: 0, noRecentRun: 0, skipped: 0, successful: 0, total: jobs.length }
  const issues: SiteBackups['issues'] = []
  const allLogs = logsByJob(reads)
  for (const job of jobs) {
    const selected = selectVms(job.vms, candidates)
    if (!hasEnabledSchedule(reads, job.id)) {
      counts.disabled++
      for (const vm of selected) mark(vm.id, false)
      continue
    }
    const finished = (allLogs.get(job.id) ?? []).filter((log) => log.status !== 'pending').reverse()
    const lastThree = finished.slice(0, 3)
    const ofTheWeek = finished.filter((log) => log.start > weekStart)
    if (ofTheWeek.length === 0) counts.noRecentRun++
    else if (ofTheWeek.some((log) => log.status === 'failure' || log.status === 'interrupted')) counts.failed++
    else if (ofTheWeek.some((log) => log.status === 'skipped')) counts.skipped++
    else counts.successful++
    if (lastThree.length === 0) {
      for (const vm of selected) mark(vm.id, false)
      continue
    }
    const outcomes = new Map<string, boolean[]>()
    for (const log of lastThree) {
      const entries = log.tasks === undefined ? selected.map((vm) => [vm.id, log.status === 'success'] as const) : log.tasks.filter((task) => typeof task.data?.['id'] === 'string').map((task) => [String(task.data?.['id']), task.status === 'success'] as const)
      for (const [vmId, success] of entries) outcomes.set(vmId, [...(outcomes.get(vmId) ?? []), success])
    }
    for (const [vmId, results] of outcomes) mark(vmId, results.every(Boolean))
    if (lastThree.some((log) => log.status !== 'success')) {
      issues.push({ logs: lastThree.map((log) => log.status as Finished), name: job.name, type: 'backup', uuid: job.id })
    }
  }
  return {
    jobs: counts,
    issues,
    vmsProtection: { protected: protectedIds.size, unprotected: unprotectedIds.size, notInJob: candidates.length - protectedIds.size - unprotectedIds.size },
  }
}

export interface VmBackups {
  lastRuns: Array<{ backupJobId: string; timestamp: number | undefined; status: string | undefined }>
  vmProtection: 'protected' | 'unprotected' | 'not-in-active-job'
  backupArchives: Array<{ id: string; timestamp: number; backupRepository: string; size: number }>
}

export async function vmBackups(reads: BackupReads, vm: XoRecord): Promise<VmBackups> {
  const jobs = [...reads.jobs()].filter((job) => selectVms(job.vms, [vm]).length === 1)
  const jobIds = new Set(jobs.map((job) => job.id))
  const logs = [...reads.logs()].filter((log) => jobIds.has(log.jobId) && (log.tasks === undefined || vmTaskOf(log, vm.id) !== undefined))
  const lastRuns = logs
    .slice(-3)
    .reverse()
    .map((log) => ({ backupJobId: log.jobId, timestamp: log.end, status: vmStatusIn(log, vm.id) }))
  let vmProtection: VmBackups['vmProtection'] = 'not-in-active-job'
  if (!noBackupTag(vm)) {
    for (const job of jobs.filter((candidate) => hasEnabledSchedule(reads, candidate.id))) {
      const last = logs.filter((log) => log.jobId === job.id && log.status !== 'pending').slice(-3)
      vmProtection = last.length > 0 && last.every((log) => vmStatusIn(log, vm.id) === 'success') ? 'protected' : 'unprotected'
      if (vmProtection === 'protected') break
    }
  }
  const backupArchives = [...(await reads.archives())]
    .filter((archive) => archive.vm.uuid === vm.id)
    .sort((a, b) => b.timestamp - a.timestamp)
    .slice(0, 3)
    .map(({ id, timestamp, backupRepository, size }) => ({ id, timestamp, backupRepository, size }))
  return { lastRuns, vmProtection, backupArchives }
}
