import type { XoRecord } from './types.js'

/** A package update a host lacks, as XCP-ng's updater describes it (the reference's `XcpPatches`). */
export interface MissingPatch {
  readonly name: string
  readonly version: string
  readonly release: string
  readonly description: string
  readonly url: string
  readonly license: string
  readonly size: number
  readonly changelog: { readonly date: number; readonly description: string; readonly author: string }
}

/** One file of a host's log archive. */
export interface HostLogFile {
  readonly name: string
  readonly text: string
  /** seconds */
  readonly mtime: number
}

/**
 * What a host tells about itself beyond its record: the updates it lacks,
 * whether its CPUs run two threads per core, its audit log and its log files.
 * A pool driver asks the host (its updater plugin, `/audit_log`,
 * `/host_logs_download`); the lab makes them from its records. Each is asked
 * of a running host only.
 */
export interface HostFacts {
  missingPatches(host: XoRecord): Promise<readonly MissingPatch[]>
  smtEnabled(host: XoRecord): Promise<boolean>
  auditLog(host: XoRecord): Promise<string>
  logFiles(host: XoRecord): Promise<readonly HostLogFile[]>
}
