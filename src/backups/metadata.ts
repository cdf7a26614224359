/**
 * The metadata file of an archive (`<ts>.json`, notes reference-backups.md
 * §2): compact JSON of raw XAPI records. A backup exists once this file
 * does; anything else in the folder is data it points to.
 */

export type XapiRecord = Record<string, unknown>

interface CommonMetadata {
  readonly jobId: string
  readonly scheduleId: string
  readonly timestamp: number
  /** written as "2.0.0", never read (neither does the reference) */
  readonly version: string
  /** the source VM */
  readonly vm: XapiRecord
  /** the exported snapshot */
  readonly vmSnapshot: XapiRecord
  readonly size: number
  readonly tags: readonly string[]
}

export interface FullBackupMetadata extends CommonMetadata {
  readonly mode: 'full'
  /** `./<ts>.xva`, relative to the metadata file */
  readonly xva: string
}

export interface DeltaBackupMetadata extends CommonMetadata {
  readonly mode: 'delta'
  /** VDI ref → `vdis/<job>/<live vdi>/<ts>.vhd`, relative to the VM folder */
  readonly vhds: Readonly<Record<string, string>>
  readonly vdis: Readonly<Record<string, XapiRecord>>
  readonly vbds: Readonly<Record<string, XapiRecord>>
  readonly vifs: Readonly<Record<string, XapiRecord>>
  readonly vtpms: readonly string[]
  readonly isVhdDifferencing: Readonly<Record<string, boolean>>
}

export type BackupMetadata = FullBackupMetadata | DeltaBackupMetadata

const isRecord = (value: unknown): value is XapiRecord => typeof value === 'object' && value !== null && !Array.isArray(value)
const recordsOf = (value: unknown): value is Record<string, XapiRecord> => isRecord(value) && Object.values(value).every(isRecord)
const stringsOf = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string')

/**
 * A metadata file's content, or the reason it is not one: files of other
 * tools or versions are skipped by listings, never trusted blindly.
 */
export function parseBackupMetadata(text: string): BackupMetadata | { readonly error: string } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return { error: `not JSON: ${(error as Error).message}` }
  }
  if (!isRecord(value)) return { error: 'not an object' }
  const { jobId, scheduleId, timestamp, mode, vm, vmSnapshot, size, tags, version } = value
  if (typeof jobId !== 'string') return { error: 'jobId is not a string' }
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) return { error: 'timestamp is not a number' }
  if (!isRecord(vm) || !isRecord(vmSnapshot)) return { error: 'vm and vmSnapshot must be records' }
  const common = {
    jobId,
    scheduleId: typeof scheduleId === 'string' ? scheduleId : '',
    timestamp,
    version: typeof version === 'string' ? version : '2.0.0',
    vm,
    vmSnapshot,
    size: typeof size === 'number' ? size : 0,
    tags: stringsOf(tags) ? tags : [],
  }
  if (mode === 'full') {
    if (typeof value['xva'] !== 'string') return { error: 'xva is not a string' }
    return { ...common, mode, xva: value['xva'] }
  }
  if (mode !== 'delta') return { error: `mode ${JSON.stringify(mode)} is neither full nor delta` }
  const { vhds, vdis, vbds, vifs, vtpms, isVhdDifferencing } = value
  if (!isRecord(vhds) || !Object.values(vhds).every((path) => typeof path === 'string')) return { error: 'vhds must map VDI refs to paths' }
  if (!recordsOf(vdis) || !recordsOf(vbds)) return { error: 'vdis and vbds must be records' }
  return {
    ...common,
    mode,
    vhds: vhds as Record<string, string>,
    vdis,
    vbds,
    vifs: recordsOf(vifs) ? vifs : {},
    vtpms: stringsOf(vtpms) ? vtpms : [],
    // Written as 0/1 by old XenServer versions.
    isVhdDifferencing: Object.fromEntries(Object.keys(vhds).map((ref) => [ref, isRecord(isVhdDifferencing) && (isVhdDifferencing[ref] === true || isVhdDifferencing[ref] === 1)])),
  }
}

export const isParsed = (parsed: BackupMetadata | { readonly error: string }): parsed is BackupMetadata => !('error' in parsed)
