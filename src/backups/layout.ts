import { isUuid, UUID_PATTERN } from '../uuid.js'

/**
 * Names in a backup repository, as the reference lays it out (notes
 * reference-backups.md §1): `xo-vm-backups/<vm uuid>/<ts>.json` beside
 * `<ts>.xva` or `vdis/<job id>/<live vdi uuid>/<ts>.vhd`, with `<ts>` the
 * UTC time to the second, `%Y%m%dT%H%M%SZ`. Only validated parts ever
 * become part of a path.
 */

export const VM_BACKUPS_DIR = 'xo-vm-backups'

const TIMESTAMP = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/
const ARCHIVE_ID = new RegExp(`^([^/]+)/+${VM_BACKUPS_DIR}/+(${UUID_PATTERN})/+(\\d{8}T\\d{6}Z)\\.json$`)

const isBackupTimestamp = (value: string): boolean => TIMESTAMP.test(value)

export function formatBackupTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '')
}

/** Milliseconds of a `<ts>`, or undefined when it is not one. */
export function parseBackupTimestamp(ts: string): number | undefined {
  const match = TIMESTAMP.exec(ts)
  if (match === null) return undefined
  const [, year, month, day, hours, minutes, seconds] = match.map(Number) as [number, number, number, number, number, number, number]
  const ms = Date.UTC(year, month - 1, day, hours, minutes, seconds)
  return formatBackupTimestamp(ms) === ts ? ms : undefined
}

/** The path the reference keys archives by: with a leading slash, relative to the repository root. */
export function metadataPath(vmUuid: string, ts: string): string {
  return `/${VM_BACKUPS_DIR}/${vmUuid}/${ts}.json`
}

/** `<repository id>/<metadata path>`: it holds `//`, as the reference's ids do. */
export function archiveId(repositoryId: string, path: string): string {
  return `${repositoryId}/${path}`
}

export interface ArchiveName {
  readonly repositoryId: string
  readonly vmUuid: string
  readonly ts: string
  readonly metadataPath: string
}

/** An archive id taken apart (repeated slashes accepted, as the reference's pattern does), or undefined. */
export function parseArchiveId(id: string): ArchiveName | undefined {
  const match = ARCHIVE_ID.exec(id)
  if (match === null) return undefined
  // Every group of the pattern takes part in a match: the defaults only satisfy the index type.
  const [, repositoryId = '', vmUuid = '', ts = ''] = match
  if (parseBackupTimestamp(ts) === undefined) return undefined
  return { repositoryId, vmUuid, ts, metadataPath: metadataPath(vmUuid, ts) }
}

/** A delta archive's disk, relative to the VM folder. */
export function vhdPath(jobId: string, vdiUuid: string, ts: string): string {
  if (!isUuid(jobId) || !isUuid(vdiUuid) || !isBackupTimestamp(ts)) throw new RangeError(`no VHD path for job ${jobId}, disk ${vdiUuid}, time ${ts}`)
  return `vdis/${jobId}/${vdiUuid}/${ts}.vhd`
}

/** The parts of a VHD path a metadata file names, or undefined when it is not one this layout writes. */
export function parseVhdPath(path: string): { jobId: string; vdiUuid: string; name: string } | undefined {
  const match = /^(?:\.\/)?vdis\/([^/]+)\/([^/]+)\/([^/]+\.vhd)$/.exec(path)
  if (match === null) return undefined
  const [, jobId = '', vdiUuid = '', name = ''] = match
  return isSafeName(jobId) && isSafeName(vdiUuid) && isSafeName(name) ? { jobId, vdiUuid, name } : undefined
}

/**
 * The temporary names Keel's writers use, dot-first so that readers skip
 * them: a VHD or XVA being written (`.<ms>.<ts>.vhd`), a file being
 * replaced whole (`.<12 hex>.tmp`). The start-up clean-up removes only
 * these and data named as below that no metadata names.
 */
export const temporaryDataName = (ts: string, extension: 'xva' | 'vhd', now: number): string => `.${now}.${ts}.${extension}`
export const temporaryReplacementName = (hex: string): string => `.${hex}.tmp`
const TEMPORARY = /^\.(?:\d+\.\d{8}T\d{6}Z\.(?:xva|vhd)|[0-9a-f]{12}\.tmp)$/
export const isTemporaryName = (name: string): boolean => TEMPORARY.test(name)

/** A full archive's data (`<ts>.xva`) or its checksum: the name of the XVA, or undefined. */
export function xvaOfDataName(name: string): string | undefined {
  return /^(\d{8}T\d{6}Z\.xva)(?:\.checksum)?$/.exec(name)?.[1]
}

/** A delta archive's disk as Keel and the reference name it (not the VHD directory mode's `.alias.vhd`). */
export const isVhdDataName = (name: string): boolean => /^\d{8}T\d{6}Z\.vhd$/.test(name)

/** A single path segment that cannot climb out of its folder. */
export function isSafeName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\') && !name.includes('\0')
}
