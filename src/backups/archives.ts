import type { XoRecord } from '../driver/types.js'
import type { EventBus } from '../events/bus.js'
import type { BackupArchive } from '../model/backups.js'
import { archiveId } from './layout.js'
import type { BackupMetadata } from './metadata.js'

/** An archive record as the REST API lists it (notes reference-backups.md §5), from its metadata. */
export function archiveRecord(repositoryId: string, metadataPath: string, metadata: BackupMetadata, chain: readonly string[]): BackupArchive {
  const vm = metadata.vm as Record<string, unknown>
  const text = (value: unknown): string => (typeof value === 'string' ? value : '')
  const base = {
    id: archiveId(repositoryId, metadataPath),
    type: 'xo-vm-backup' as const,
    backupRepository: repositoryId,
    jobId: metadata.jobId,
    mode: metadata.mode,
    scheduleId: metadata.scheduleId,
    size: metadata.size,
    timestamp: metadata.timestamp,
    vm: {
      uuid: text(vm['uuid']),
      name_label: text(vm['name_label']),
      name_description: text(vm['name_description']),
      tags: Array.isArray(vm['tags']) ? vm['tags'].filter((tag): tag is string => typeof tag === 'string') : [],
    },
    tags: [...metadata.tags],
    withMemory: !['', 'OpaqueRef:NULL'].includes(text((metadata.vmSnapshot as Record<string, unknown>)['suspend_VDI'])),
  }
  if (metadata.mode === 'full') return { ...base, disks: [] }
  const differencing = Object.values(metadata.isVhdDifferencing).filter(Boolean).length
  return {
    ...base,
    disks: Object.entries(metadata.vhds).map(([ref, path]) => {
      const vdi = metadata.vdis[ref] ?? {}
      return { id: path, name: text(vdi['name_label']), uuid: text(vdi['uuid']) }
    }),
    differencingVhds: differencing,
    dynamicVhds: Object.keys(metadata.vhds).length - differencing,
    chain: [...chain],
  }
}

/**
 * The archives of every repository Keel has listed, in memory so that the
 * collection answers at once and `restore`/`DELETE` find them; refreshed
 * from the repository after every run, delete and listing. Changes are
 * published on the event bus like any other collection's.
 */
export class ArchiveIndex {
  readonly #bus: EventBus
  readonly #byRepository = new Map<string, Map<string, BackupArchive>>()

  constructor(bus: EventBus) {
    this.#bus = bus
  }

  list(repositoryIds?: ReadonlySet<string>): BackupArchive[] {
    const out: BackupArchive[] = []
    for (const [id, archives] of this.#byRepository) if (repositoryIds === undefined || repositoryIds.has(id)) out.push(...archives.values())
    return out
  }

  get(id: string): BackupArchive | undefined {
    for (const archives of this.#byRepository.values()) {
      const archive = archives.get(id)
      if (archive !== undefined) return archive
    }
    return undefined
  }

  /** Replaces what is known of a repository; unchanged archives keep their record (and cached JSON). */
  replace(repositoryId: string, archives: readonly BackupArchive[]): void {
    const before = this.#byRepository.get(repositoryId) ?? new Map<string, BackupArchive>()
    const after = new Map<string, BackupArchive>()
    for (const archive of archives) {
      const previous = before.get(archive.id)
      const same = previous !== undefined && JSON.stringify(previous) === JSON.stringify(archive)
      const kept = same ? previous : (Object.freeze(archive) as BackupArchive)
      after.set(archive.id, kept)
      if (!same) this.#bus.publish(previous === undefined ? { kind: 'add', object: kept } : { kind: 'update', object: kept, previous: previous })
    }
    this.#byRepository.set(repositoryId, after)
    for (const [id, archive] of before) if (!after.has(id)) this.#bus.publish({ kind: 'remove', object: archive, previous: archive })
  }

  forget(repositoryId: string): void {
    this.replace(repositoryId, [])
    this.#byRepository.delete(repositoryId)
  }
}
