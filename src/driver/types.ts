import type { DiskBlock } from '../formats/blocks.js'
import type { XvaDescription } from '../formats/xva/description.js'

/**
 * The boundary between Keel and the infrastructure it manages. The REST layer
 * sees only this interface; the local lab implements it today and a driver for
 * real hypervisor pools will implement it later. test/driver/conformance.ts
 * holds every driver to the contract below.
 *
 * The contract, and why the service relies on it:
 * - Records are immutable (deep-frozen): they are handed out without copies,
 *   to many readers at once.
 * - A changed record is a new object; an unchanged one keeps its identity,
 *   across reads and across changes to other records. The JSON cache keys a
 *   WeakMap on record objects, so identity is what says "still the same text".
 * - A change is durable before it is published: a client that saw it (or a
 *   task answer naming it) finds it again after a restart.
 * - Read-your-writes is asked for, not assumed. An operation's promise settles
 *   once its changes are committed at the source (the pool); the index
 *   (`getObject`, `objectsOfType`, subscribers) may show them later: a pool
 *   driver learns of them from a change stream (XAPI's `event.from`). Who
 *   answers a client after a change first awaits `settled()`, a barrier over
 *   everything committed before the call (XAPI: `event.inject`, then read the
 *   stream up to the injected event); `waitFor` waits for one record or a
 *   condition on it. Both give up with INDEX_TIMEOUT rather than hang when
 *   the stream stalls. A driver whose index is its source (the lab) resolves
 *   them at once. test/driver/lagged-driver.ts holds every caller to it.
 * - `objectsOfType` order is stable: an updated record keeps its place, a new
 *   one comes last, and a restart gives the same order, so a listing with
 *   `limit` gives the same first objects each time.
 * - A `remove` change carries the last known record, so listeners (caches,
 *   access checks, event streams) know the type and fields of what went away.
 * - Semantic failures are KeelErrors with the codes listed at DriverOperations;
 *   anything else is a bug and becomes a 500.
 * - A driver serves exactly what `capabilities` declares; the routes offer
 *   only what both it and the catalogue support, checked at start-up.
 */

/** An infrastructure object as the REST API serves it (XO record shape). Frozen. */
export interface XoRecord {
  readonly id: string
  readonly type: string
  readonly [field: string]: unknown
}

export type ChangeKind = 'add' | 'update' | 'remove'

/** One committed, durable change, published after it was stored. */
export interface ObjectChange {
  readonly kind: ChangeKind
  /** the new record, or for `remove` the last known record */
  readonly object: XoRecord
  /** the record it replaced (`update`) or that went away (`remove`, the same as `object`) */
  readonly previous?: XoRecord
}

/** Called synchronously for each change, in commit order. */
export type ChangeListener = (change: ObjectChange) => void

/** Live figures a real pool reads from its statistics (the lab simulates them). */
export interface UsageFigures {
  /** CPU use, 0 to 1 of the object's CPUs */
  readonly cpu: number
  /** bytes of memory in use, for objects that have memory */
  readonly memory?: number
}

/** What this driver can do; routes and the action catalogue are built from what both it and src/model/operations.ts support. */
export interface DriverCapabilities {
  /** action names by object type (`VM` → ['start', 'clean_shutdown', ...]) */
  readonly actions: Readonly<Record<string, readonly string[]>>
  /** object types whose records PATCH may change */
  readonly patch: readonly string[]
  /** object types DELETE may destroy */
  readonly destroy: readonly string[]
  /** object types whose tags may be set */
  readonly tags: readonly string[]
  /** object types POST /<collection> may create (none when absent) */
  readonly create?: readonly string[]
}

/** The four archives a host keeps of each statistic (its RRDs): a point every 5 s, minute, hour or day. */
export type StatsGranularity = 'seconds' | 'minutes' | 'hours' | 'days'

/** Statistics in xo-server's shape: one array per metric (nested by device), oldest point first, null where nothing was recorded. */
export interface XapiStats {
  /** seconds */
  readonly endTimestamp: number
  /** seconds between points */
  readonly interval: number
  readonly stats: StatsTree
}

export interface StatsTree {
  [metric: string]: Array<number | null> | StatsTree
}

/**
 * Where the statistics routes read from. A driver that reaches real hosts
 * reads their RRDs (`/rrd_updates`) and `VM.record_data_source`; without one,
 * Keel makes them from `usage` (src/stats/reader.ts).
 */
export interface StatsReader {
  /** A running host's statistics; INCORRECT_STATE otherwise. */
  hostStats(host: XoRecord, granularity: StatsGranularity): Promise<XapiStats>
  /** A running or paused VM's statistics; INVALID_PARAMETERS otherwise, as the reference answers. */
  vmStats(vm: XoRecord, granularity: StatsGranularity): Promise<XapiStats>
  /** Starts (`true`) or stops recording one of a running VM's data sources. */
  setDataSource(vm: XoRecord, dataSource: string, recorded: boolean): Promise<void>
}

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

export interface Driver extends DriverOperations {
  /** Fixed for the driver's life: read once at start-up to build the routes. */
  readonly capabilities: DriverCapabilities
  /** Brings its own storage up to date, loads (and on first start seeds) the object index. */
  open(): Promise<void>
  close(): Promise<void>
  /** Whether the driver serves: opened, not closed, its storage or pool reachable (for health checks). */
  isOpen(): boolean
  /** Every object of one XO type (`VM`, `host`, ...), in a stable order; empty for an unknown type. */
  objectsOfType(type: string): Iterable<XoRecord>
  /** Counts objects of one type without materialising them. */
  countOfType(type: string): number
  /** One object by id, whatever its type. */
  getObject(id: string): XoRecord | undefined
  /** Current usage of a host or VM at `now` (ms). */
  usage(object: XoRecord, now: number): UsageFigures
  /**
   * Reads the figures `usage` then gives for these objects, where the driver
   * reads them from the pool rather than computing them (the XAPI driver: the
   * hosts' RRDs). Absent where `usage` needs nothing read first.
   */
  readUsage?(objects: Iterable<XoRecord>): Promise<void>
  /** Subscribes to every change from now on; returns the unsubscribe function. */
  subscribe(listener: ChangeListener): () => void
  /**
   * Resolves once every change committed before the call is in the index and
   * published to subscribers; rejects with INDEX_TIMEOUT when that takes
   * longer than `timeout`.
   */
  settled(options?: WaitOptions): Promise<void>
  /**
   * Resolves with the record of `id` once the index holds it and `until`
   * (default: any record) accepts it; rejects with INDEX_TIMEOUT when that
   * takes longer than `timeout`. It may resolve sooner than `settled()`,
   * which also waits for every other record the call changed.
   */
  waitFor(id: string, options?: WaitForOptions): Promise<XoRecord>
  /** disk content of VDIs and VDI snapshots, for drivers that serve it */
  readonly disks?: DiskAccess
  /** the hosts' statistics (their RRDs), for drivers that read them; without, they are made from `usage` */
  readonly stats?: StatsReader
  /** what hosts tell beyond their records (updates, logs), for drivers that ask them; without, the lab's */
  readonly hostFacts?: HostFacts
}

export interface WaitOptions {
  /** ms before giving up (default: the driver's, DEFAULT_INDEX_WAIT in src/driver/index-waits.ts) */
  readonly timeout?: number
}

export interface WaitForOptions extends WaitOptions {
  readonly until?: (record: XoRecord) => boolean
}

/** What a long operation may use while it runs. */
export interface OperationContext {
  /** aborted when the task is asked to stop; long operations check it and end with an abort error */
  readonly signal: AbortSignal
  /** the acting user's id (recorded on created objects) */
  readonly userId: string
  /** reports completion, 0 to 100 */
  progress(percent: number): void
}

/** The object an operation created, for `201 {id}` and `Location`: committed at the source, in the index only once `settled()` resolves. */
export interface Created {
  readonly id: string
  readonly type: string
}

/**
 * The operations a driver carries out. Callers only ask for what
 * `capabilities` declares (a driver may reject anything else with
 * NO_SUCH_OBJECT). Names and parameters are the REST API's own
 * (src/model/operations.ts), already validated against their schemas, with
 * every referenced object checked to exist; besides them, Keel itself (never
 * a client: the REST schema refuses it) passes a VM `snapshot` an
 * `other_config` of string entries for the snapshot's other_config, which
 * never inherits the VM's installation mark (src/installation.ts), so that
 * only the taker marks a snapshot. Semantic failures are KeelErrors
 * (INCORRECT_STATE with `{actual, expected}`, INVALID_PARAMETERS,
 * NO_SUCH_OBJECT, ABORTED). Every change is durable at the source before
 * the promise settles, not necessarily in the index (see `settled()`); an
 * operation that fails or is aborted leaves a consistent state (what it had
 * committed so far, or what it put back). The records given are the caller's
 * view, which may lag: a driver acts on the object by its id, as the source
 * knows it.
 */
export interface DriverOperations {
  perform(object: XoRecord, action: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created | undefined>
  /** applies all fields or none */
  update(object: XoRecord, patch: Readonly<Record<string, unknown>>): Promise<void>
  destroy(object: XoRecord, context: OperationContext): Promise<void>
  setTag(object: XoRecord, tag: string, present: boolean): Promise<void>
  /** a new object of `type` (one `capabilities.create` names) from the parameters of its catalogue entry (creationsByType) */
  create?(type: string, params: Readonly<Record<string, unknown>>, context: OperationContext): Promise<Created>
}

/** Reading a disk's blocks: at most `concurrency` reads in flight, blocks yielded in ascending order. */
export interface DiskReadOptions {
  readonly concurrency?: number
  /**
   * Where to read each block: a driver that honours it reads the block's
   * content into the BLOCK_SIZE buffer this gives and yields that very
   * buffer, so a caller can have blocks land straight in memory a worker
   * shares. A driver may ignore it; the caller then copies.
   */
  readonly buffer?: () => Promise<Buffer>
}

/** A block to write; with a `bitmap`, only its sectors whose bits are set count (a differencing block). */
export interface DiskWrite extends DiskBlock {
  readonly bitmap?: Buffer
}

/**
 * New content for a disk, taking effect only on `commit()`: until then the
 * disk reads as before, and `abort()` leaves nothing behind. Blocks not
 * written read as zeros after the commit (the content is replaced whole),
 * unless the session was opened to `patch` the current content.
 */
export interface DiskWriteSession {
  write(block: DiskWrite): Promise<void>
  /** durable before it resolves */
  commit(): Promise<void>
  abort(): Promise<void>
}

export interface DiskWriteOptions {
  /** keep the current content: only the written blocks change (a differencing VHD applied on top) */
  readonly patch?: boolean
}

/** A VDI to create from imported content. */
export interface NewVdi {
  readonly name_label: string
  readonly name_description: string
  /** virtual size in bytes */
  readonly size: number
}

/**
 * Content for objects that do not exist yet: nothing exists until `commit`
 * creates them, durably (in the index once `settled()` resolves); `abort`
 * leaves nothing behind.
 */
export interface ImportSession {
  /** a block of disk number `disk` (0 for a single VDI; for a VM, the position in the description's disks) */
  write(disk: number, block: DiskBlock): Promise<void>
  commit(): Promise<Created>
  abort(): Promise<void>
}

/**
 * A driver's disk content, in 2 MiB blocks (src/formats/blocks.ts). Shaped so
 * a pool driver can serve it over NBD (allocation from block status, reads as
 * NBD reads, changed blocks from the snapshot's CBT bitmap) and the
 * hypervisor's import handlers (write sessions, VDI.create and VM import).
 */
/** One read of a disk: its allocation first, then blocks from the same source. */
export interface DiskRead {
  /** ascending indexes of the blocks holding data */
  readonly allocated: readonly number[]
  /** `indexes` ascending, yielded in that order; once per read, which ends with the iteration (whole or stopped early) */
  blocks(indexes: readonly number[], options?: DiskReadOptions): AsyncIterable<DiskBlock>
  /** ends a read whose blocks are not iterated; nothing once they are */
  close(): Promise<void>
}

export interface DiskAccess {
  /** ascending indexes of the blocks holding data, known without reading them */
  allocation(vdi: XoRecord): Promise<number[]>
  /**
   * The allocation, then the blocks, in one read: on XAPI one transfer, the
   * table being the head of the very VHD stream the blocks follow, which
   * waits meanwhile. Holds the source until its blocks are iterated or it is closed.
   */
  openRead(vdi: XoRecord): Promise<DiskRead>
  /** ascending indexes of the blocks that may differ between a VDI and a snapshot of it (never fewer than those that do) */
  changedBlocks(vdi: XoRecord, base: XoRecord): Promise<number[]>
  /** `indexes` ascending, yielded in that order */
  readBlocks(vdi: XoRecord, indexes: readonly number[], options?: DiskReadOptions): AsyncIterable<DiskBlock>
  /** new content for an existing VDI (of the same virtual size) */
  openWrite(vdi: XoRecord, options?: DiskWriteOptions): Promise<DiskWriteSession>
  /** a new VDI on `sr`, created when the session commits */
  importVdi(sr: XoRecord, vdi: NewVdi, userId: string): Promise<ImportSession>
  /** a new halted VM with its disks on `sr` and its VIFs on the pool's networks of the same names, created when the session commits */
  importVm(sr: XoRecord, description: XvaDescription, userId: string): Promise<ImportSession>
}
