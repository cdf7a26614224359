import { pipeline, Readable, type Duplex } from 'node:stream'
import { diskSize } from '../driver/disk-size.js'
import type { DiskAccess, XoRecord } from '../driver/types.js'
import { KeelError } from '../errors.js'
import type { DiskSource } from '../formats/blocks.js'
import { detectCompression, isOva, ovaNotSupported, peek, type Compression } from '../formats/compression.js'
import type { XvaDescription, XvaDisk, XvaVif } from '../formats/xva/description.js'
import { openXvaStream } from '../formats/xva/xva-reader.js'
import { feedImport } from './import.js'

/** The per-byte stream work Keel runs off the main thread (workers/pool.ts). */
export interface StreamWorkers {
  /** a named pipeline (workers/pipelines.ts) */
  transform(name: string): Duplex
  /** an XVA of `disks`, compressed as asked; each chunk is lent (formats/lending.ts) */
  encodeXva(description: XvaDescription, disks: readonly DiskSource[], compression: Compression, options?: XvaOptions): AsyncIterable<Buffer>
  /** the same archive, written by the worker into an open file from its start; its size, once the worker no longer touches the file */
  writeXva(description: XvaDescription, disks: readonly DiskSource[], compression: Compression, file: XvaFile, options?: XvaOptions): Promise<number>
}

/**
 * A file a worker writes an archive into, from its start, with positional
 * writes on its own thread (workers/file-output.ts).
 */
export interface XvaFile {
  /** open for writing, and kept open by the caller until the worker is done with it */
  readonly fd: number
  /** bytes after which the file's datasync is started, the writes going on meanwhile (backups/chunk-writer.ts) */
  readonly syncEvery: number
}

export interface XvaOptions {
  /** the archive's timestamps */
  readonly now?: Date
  /** receives the MD5 of the whole archive (hex) once its last byte is produced, before the stream ends */
  readonly md5?: (hex: string) => void
}

type Lookup = (id: string) => XoRecord | undefined

const text = (value: unknown): string => (typeof value === 'string' ? value : '')
const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0)
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [])

function stringRecord(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object') return {}
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
}

/** What an XVA carries of a VM (or snapshot, or template) and its disks, read off its records. */
export function describeVm(vm: XoRecord, lookup: Lookup): { description: XvaDescription; vdis: XoRecord[] } {
  const memory = (vm.memory ?? {}) as { static?: unknown; dynamic?: unknown; size?: unknown }
  const [staticMin, staticMax] = Array.isArray(memory.static) ? memory.static.map(num) : [num(memory.size), num(memory.size)]
  const [dynamicMin, dynamicMax] = Array.isArray(memory.dynamic) ? memory.dynamic.map(num) : [num(memory.size), num(memory.size)]
  const cpus = (vm.CPUs ?? {}) as { max?: unknown; number?: unknown }
  const drives = strings(vm.$VBDs)
    .map(lookup)
    .filter((vbd): vbd is XoRecord => vbd !== undefined && vbd.is_cd_drive !== true && typeof vbd.VDI === 'string')
    .sort((a, b) => Number(a.position) - Number(b.position))
  const vdis: XoRecord[] = []
  const disks: XvaDisk[] = []
  for (const vbd of drives) {
    const vdi = lookup(text(vbd.VDI))
    if (vdi === undefined) continue
    vdis.push(vdi)
    disks.push({
      uuid: vdi.id,
      name_label: text(vdi.name_label),
      name_description: text(vdi.name_description),
      virtual_size: diskSize(vdi),
      device: text(vbd.device),
      userdevice: text(vbd.position),
      bootable: vbd.bootable === true,
      mode: vbd.read_only === true ? 'RO' : 'RW',
    })
  }
  const vifs: XvaVif[] = strings(vm.VIFs).flatMap((id) => {
    const vif = lookup(id)
    if (vif === undefined) return []
    return [{ uuid: vif.id, device: text(vif.device), MAC: text(vif.MAC), MTU: num(vif.MTU) || 1500, network_name_label: text(lookup(text(vif.$network))?.name_label) }]
  })
  const description: XvaDescription = {
    vm: {
      uuid: vm.id,
      name_label: text(vm.name_label),
      name_description: text(vm.name_description),
      memory_static_max: staticMax ?? 0,
      memory_static_min: staticMin ?? 0,
      memory_dynamic_max: dynamicMax ?? 0,
      memory_dynamic_min: dynamicMin ?? 0,
      VCPUs_max: num(cpus.max) || 1,
      VCPUs_at_startup: num(cpus.number) || 1,
      is_a_template: vm.type === 'VM-template',
      tags: strings(vm.tags),
      other_config: stringRecord(vm.other),
    },
    disks,
    vifs,
  }
  return { description, vdis }
}

/** `compress` as the reference takes it: `gzip`, `zstd`, and the deprecated `true` (gzip) and `false`. */
export function compressionOf(value: string | undefined): Compression {
  if (value === undefined || value === '' || value === 'false') return 'none'
  if (value === 'true' || value === 'gzip') return 'gzip'
  if (value === 'zstd') return 'zstd'
  throw new KeelError('INVALID_PARAMETERS', `compress must be gzip, zstd, true or false, not ${value}`, { errors: [{ path: 'query.compress', message: 'must be gzip, zstd, true or false' }] })
}

/** `source` through a worker transform; a failure on either side ends the result with that error. */
function through(workers: StreamWorkers, name: string, source: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  return pipeline(Readable.from(source, { objectMode: false }), workers.transform(name), () => {}) as AsyncIterable<Buffer>
}

/**
 * A VM's XVA: ova.xml, then every disk's chunks, compressed when asked, all
 * encoded in a worker. Each chunk is lent (formats/lending.ts): its consumer
 * gives it back once it no longer reads it.
 */
export async function* exportXva(
  disks: DiskAccess,
  description: XvaDescription,
  vdis: readonly XoRecord[],
  compression: Compression,
  workers: StreamWorkers,
  { concurrency = 1, ...options }: XvaOptions & { readonly concurrency?: number } = {},
): AsyncGenerator<Buffer> {
  yield* workers.encodeXva(description, await diskSources(disks, vdis, concurrency), compression, options)
}

async function diskSources(disks: DiskAccess, vdis: readonly XoRecord[], concurrency: number): Promise<DiskSource[]> {
  const sources: DiskSource[] = []
  for (const vdi of vdis) {
    const allocated = await disks.allocation(vdi)
    // Lazy: a disk's reads start (and hold its SR) only when the encoding reaches it.
    sources.push({ size: diskSize(vdi), allocated, read: (buffer) => disks.readBlocks(vdi, allocated, { concurrency, buffer }) })
  }
  return sources
}

/**
 * exportXva's archive written by a worker into `file` (a backup's): the
 * blocks are read on this thread, everything per byte after them, the
 * kernel's copies into the file included, runs on the worker's.
 */
export async function writeXvaFile(
  disks: DiskAccess,
  description: XvaDescription,
  vdis: readonly XoRecord[],
  compression: Compression,
  workers: StreamWorkers,
  file: XvaFile,
  { concurrency = 1, ...options }: XvaOptions & { readonly concurrency?: number } = {},
): Promise<number> {
  return workers.writeXva(description, await diskSources(disks, vdis, concurrency), compression, file, options)
}

/**
 * Creates a VM from an XVA stream, plain or compressed (told apart by its
 * first bytes, decompressed in a worker). Every chunk's checksum is verified
 * and nothing shows until the whole archive is in. Returns the new VM's id.
 */
export async function importXva(disks: DiskAccess, sr: XoRecord, input: AsyncIterable<Uint8Array>, userId: string, workers: StreamWorkers): Promise<string> {
  const { head, stream } = await peek(input, 512)
  const compression = detectCompression(head)
  if (compression === 'none' && isOva(head)) throw ovaNotSupported()
  const plain = compression === 'none' ? stream : through(workers, `${compression}-decompress`, stream)
  const reader = await openXvaStream(plain)
  const session = await disks.importVm(sr, reader.description, userId)
  await feedImport(session, reader.blocks, (block) => session.write(block.disk, block))
  return (await session.commit()).id
}
