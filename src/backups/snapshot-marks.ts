import type { XoRecord } from '../driver/types.js'
import type { BackupJob } from '../model/backups.js'
import { INSTALLATION_MARK } from '../installation.js'
import { formatBackupTimestamp } from './layout.js'

/**
 * The `other_config` a backup snapshot is taken with: this installation's
 * mark, which alone lets a later start remove it, beside the keys the
 * reference writes on its own backup snapshots (notes reference-backups.md),
 * so that tools reading those find the job, schedule, VM and time.
 */
export function backupSnapshotMarks(installationId: string, job: Pick<BackupJob, 'id'>, scheduleId: string | undefined, vm: XoRecord, now: number): Record<string, string> {
  return {
    [INSTALLATION_MARK]: installationId,
    'xo:backup:datetime': formatBackupTimestamp(now),
    'xo:backup:job': job.id,
    ...(scheduleId === undefined ? {} : { 'xo:backup:schedule': scheduleId }),
    'xo:backup:vm': vm.id,
  }
}

/** Whether a VM snapshot was taken for a backup by this installation; a name alone says nothing (the reference names its own the same). */
export function isOwnBackupSnapshot(snapshot: XoRecord, installationId: string): boolean {
  const other = snapshot['other']
  if (typeof other !== 'object' || other === null) return false
  const marks = other as Readonly<Record<string, unknown>>
  return marks[INSTALLATION_MARK] === installationId && typeof marks['xo:backup:job'] === 'string'
}
