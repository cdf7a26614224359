import { Duplex } from 'node:stream'
import { Worker } from 'node:worker_threads'
import { KeelError } from '../src/errors.js'
import type { DiskBlock, DiskSource } from '../src/formats/blocks.js'
import type { Compression } from '../src/formats/compression.js'
import { giveBack, lend } from '../src/formats/lending.js'
import type { XvaDescription } from '../src/formats/xva/description.js'
import type { XvaFile, XvaOptions } from '../src/disks/xva.js'
import { forTransfer, type FromWorker, type SerializedError, type ToWorker } from './messages.js'
import { INPUT_SLOT_SIZE, OUTPUT_SLOT_SIZE, Slots } from './slots.js'

export interface WorkerPoolOptions {
  /** worker threads at most (default 2: the machines we run on have 2 cores) */
  readonly size?: number
  /**
   * bytes in flight per stream and direction (default 8 MiB): memory per stream
   * stays near 2 × windowBytes plus one chunk. Counted in bytes because a
   * transform's output chunks can be far smaller than its input's.
   */
  readonly windowBytes?: number
  /**
   * ms a worker may stay without a stream before it ends (default 1000): an
   * idle worker holds ~20 MiB, and starting one again takes ~55 ms, small
   * against any stream, so the memory goes back between backup runs.
   */
  readonly idleMs?: number
}

/** What runs in a worker for the main thread: a pipeline or an XVA encoding. */
interface Job {
  receive(message: FromWorker): void
  destroy(error: Error): void
}

interface Slot {
  readonly worker: Worker
  readonly streams: Map<number, Job>
  /** set while the worker has no stream: it ends when this fires */
  retirement: NodeJS.Timeout | undefined
}

type Post = (message: ToWorker, transfer?: ArrayBuffer[]) => void

/**
 * Blocks read ahead of the encoder, and archive bytes waiting for the socket,
 * per XVA export, 12 MiB in all (workers/slots.ts). Measured over full disk
 * benchmark runs read by its earlier node client: 8 output slots peaked at
 * 144–162 MiB of RSS (over the 150 MiB bound in three runs of five), 4 slots at
 * 135–153 MiB (over once in six), for ratios to `zstd -1` of 0.76–1.01 and
 * 0.74–0.90. Read by curl since, 4 slots measure 1.03–1.07 at 130–145 MiB.
 */
const XVA_INPUT_SLOTS = 4
export const XVA_OUTPUT_SLOTS = 4
/**
 * Input slots of an export the worker writes into a file (writeXva), whose
 * plain chunks are written from them: as many as when the main thread wrote
 * them, when the slots also held what waited for its writes (16 MiB in all;
 * fewer not measured yet).
 */
export const XVA_FILE_INPUT_SLOTS = 8

/** The shared memory of one XVA export, used again by the next one (see XvaStream). */
interface XvaMemory {
  readonly input: SharedArrayBuffer
  readonly output: SharedArrayBuffer
}

/** How many idle XvaMemory the pool keeps: one per worker covers the usual one or two exports at a time. */
const IDLE_XVA_MEMORY = 2

function revive(error: SerializedError): Error {
  if (error.code !== undefined) return new KeelError(error.code, error.message, error.data)
  // A system call's failure in the worker reads as one here (backups/repository.ts's storageError tells a full disk by it).
  return error.errno === undefined ? new Error(error.message) : Object.assign(new Error(error.message), { code: error.errno })
}

/**
 * The main-thread end of one pipeline running in a worker. Writes go to the
 * worker, results come back, both directions bounded to `windowBytes`.
 * Chunks written are moved, not copied, when they span their whole ArrayBuffer
 * (at least 64 KiB): the writer must not reuse them.
 */
class PipelineStream extends Duplex {
  readonly #post: Post
  readonly #window: number
  readonly #release: () => void
  #inFlight = 0
  #blockedWrite: ((error?: Error | null) => void) | undefined
  #unackedBytes = 0
  #finished = false

  constructor(readonly id: number, post: Post, window: number, release: () => void) {
    super()
    this.#post = post
    this.#window = window
    this.#release = release
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const { chunk: moved, transfer } = forTransfer(chunk)
    // Count before posting: the transfer empties the view.
    this.#inFlight += moved.byteLength
    this.#post({ type: 'data', id: this.id, chunk: moved }, transfer)
    if (this.#inFlight < this.#window) callback()
    else this.#blockedWrite = callback
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#post({ type: 'end', id: this.id })
    callback()
  }

  override _read(): void {
    if (this.#unackedBytes > 0) {
      this.#post({ type: 'ack', id: this.id, bytes: this.#unackedBytes })
      this.#unackedBytes = 0
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#finished) {
      this.#finished = true
      this.#post({ type: 'abort', id: this.id })
      this.#release()
    }
    callback(error)
  }

  /** Called by the pool for each message of this stream. */
  receive(message: FromWorker): void {
    switch (message.type) {
      case 'consumed': {
        this.#inFlight -= message.bytes
        if (this.#inFlight >= this.#window) break
        const blocked = this.#blockedWrite
        this.#blockedWrite = undefined
        blocked?.()
        break
      }
      case 'data':
        if (this.push(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength))) {
          this.#post({ type: 'ack', id: this.id, bytes: message.chunk.byteLength })
        } else this.#unackedBytes += message.chunk.byteLength
        break
      case 'end':
        this.#finished = true
        this.#release()
        this.push(null)
        break
      case 'error':
        this.#finished = true
        this.#release()
        this.destroy(revive(message.error))
        break
    }
  }
}

/**
 * The main-thread end of one XVA encoding (workers/xva-job.ts): blocks are
 * read or copied into shared input slots for the worker, and the archive
 * comes back as ranges of the output slots, each yielded as a view lent until
 * given back, unless the worker writes it into a file itself. An input slot
 * is read again once the worker is done with it; an output slot is filled
 * again once the worker gave it up and every range of it is given back. The
 * stream leaves the pool (`release`) only once the worker is done with it:
 * ended, failed, or stopped on request.
 */
class XvaStream implements Job {
  readonly memory: XvaMemory
  readonly input: Slots
  readonly #ready: Buffer[] = []
  readonly #post: Post
  readonly #release: () => void
  readonly #recycle: (memory: XvaMemory) => void
  /** per output slot: its ranges lent */
  readonly #outputLent: number[]
  /** per output slot: the worker posted its last range */
  readonly #outputGivenUp: boolean[]
  #wake: (() => void) | undefined
  #ended = false
  #failure: Error | undefined
  #settled = false
  /** views yielded and not given back yet */
  #lent = 0
  /** the archive's size, when the worker wrote it into a file */
  #written: number | undefined
  #workerDone = false
  #abortSent = false
  #onWorkerDone: () => void = () => {}
  /** settles once the worker no longer touches this export's memory or file */
  readonly workerDone = new Promise<void>((resolve) => (this.#onWorkerDone = resolve))

  /**
   * `recycle` gets the memory back once no thread can touch it any more: the
   * worker ended the archive and every view was given back. Memory
   * that is not recycled (a stream stopped early) is left to the collector, so
   * a worker still finishing a write can never reach the next export's bytes.
   * Allocating it per export was measured to pile up dead buffers in RSS:
   * with the blocks recycled too, nothing else starts a collection.
   */
  constructor(
    readonly id: number,
    memory: XvaMemory,
    post: Post,
    release: () => void,
    recycle: (memory: XvaMemory) => void,
    readonly md5?: (hex: string) => void,
  ) {
    this.memory = memory
    this.input = new Slots(memory.input, INPUT_SLOT_SIZE)
    this.#outputLent = new Array<number>(memory.output.byteLength / OUTPUT_SLOT_SIZE).fill(0)
    this.#outputGivenUp = new Array<boolean>(memory.output.byteLength / OUTPUT_SLOT_SIZE).fill(false)
    this.#post = post
    this.#release = release
    this.#recycle = recycle
  }

  receive(message: FromWorker): void {
    switch (message.type) {
      case 'xva-input-free':
        this.input.free(message.slot)
        return
      case 'xva-output': {
        const { slot, offset, length, last } = message
        this.#outputLent[slot] = (this.#outputLent[slot] ?? 0) + 1
        if (last) this.#outputGivenUp[slot] = true
        this.#offer(Buffer.from(this.memory.output, slot * OUTPUT_SLOT_SIZE + offset, length), () => this.#outputSent(slot))
        break
      }
      case 'xva-md5':
        this.md5?.(message.hex)
        return
      case 'xva-written':
        this.#written = message.bytes
        return
      case 'xva-stopped':
        this.#finishWorker()
        return
      case 'end':
        this.#ended = true
        this.#settle()
        this.#finishWorker()
        this.#recycleWhenIdle()
        break
      case 'error':
        this.destroy(revive(message.error))
        return
      default:
        return
    }
    this.#wake?.()
  }

  /** The worker's side failed or is gone: called for its error message, or when the pool loses or ends the worker. */
  destroy(error: Error): void {
    this.#failure ??= error
    this.#settle()
    this.#finishWorker()
    this.#wake?.()
  }

  /** This thread's side failed (a disk read): the export ends with `error`, and stop() then tells the worker. */
  fail(error: Error): void {
    this.#failure ??= error
    this.#settle()
    this.#wake?.()
  }

  /** Stops the worker's side if it still runs; called however the reading ends. */
  stop(): void {
    if (!this.#workerDone && !this.#abortSent) {
      this.#abortSent = true
      this.#post({ type: 'abort', id: this.id })
    }
    this.#failure ??= new Error('XVA export stopped')
    this.#settle()
  }

  get stopped(): boolean {
    return this.#settled
  }

  /** An input slot to read the next block into. */
  async slotBuffer(): Promise<Buffer> {
    return this.input.view(await this.input.take())
  }

  /** Passes a block to the worker: in place when it was read into a slot, else copied into one. */
  async feed(disk: number, block: DiskBlock): Promise<void> {
    const { data } = block
    let slot: number
    if (data.buffer === this.input.memory) slot = data.byteOffset / this.input.size
    else {
      slot = await this.input.take()
      this.input.view(slot).set(data)
      giveBack(data)
    }
    this.#post({ type: 'xva-block', id: this.id, disk, index: block.index, slot })
  }

  /** Once the worker wrote the whole archive into its file: its size. */
  async written(): Promise<number> {
    for (;;) {
      if (this.#failure !== undefined) throw this.#failure
      if (this.#ended) break
      await new Promise<void>((resolve) => (this.#wake = resolve))
    }
    if (this.#written === undefined) throw new Error('the XVA export ended without its size')
    return this.#written
  }

  async *chunks(): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = this.#ready.shift()
      if (chunk !== undefined) yield chunk
      else if (this.#failure !== undefined) throw this.#failure
      else if (this.#ended) return
      else await new Promise<void>((resolve) => (this.#wake = resolve))
    }
  }

  /** Lends `view` to the reader; `onReturn` runs once it is given back, unless the export is over by then. */
  #offer(view: Buffer, onReturn: () => void): void {
    this.#lent++
    this.#ready.push(
      lend(view, () => {
        this.#lent--
        if (this.#settled) this.#recycleWhenIdle()
        else onReturn()
      }),
    )
  }

  #outputSent(slot: number): void {
    const lent = (this.#outputLent[slot] ?? 0) - 1
    this.#outputLent[slot] = lent
    if (lent > 0 || this.#outputGivenUp[slot] !== true) return
    this.#outputGivenUp[slot] = false
    this.#post({ type: 'xva-output-free', id: this.id, slot })
  }

  #recycleWhenIdle(): void {
    if (this.#ended && this.#lent === 0) this.#recycle(this.memory)
  }

  #settle(): void {
    if (this.#settled) return
    this.#settled = true
    this.input.close(this.#failure ?? new Error('XVA export ended'))
  }

  #finishWorker(): void {
    if (this.#workerDone) return
    this.#workerDone = true
    this.#release()
    this.#onWorkerDone()
  }
}

/**
 * One pool of worker threads for per-byte work (zstd, gzip, checksums), so it
 * never blocks the event loop. A pipeline is a name from workers/pipelines.ts;
 * streams spread over the least busy worker. Idle workers do not keep the
 * process alive.
 */
export class WorkerPool {
  readonly #size: number
  readonly #window: number
  readonly #slots: Slot[] = []
  readonly #idleMs: number
  readonly #idleXvaMemory: XvaMemory[] = []
  #nextId = 1

  constructor({ size = 2, windowBytes = 8 * 1024 * 1024, idleMs = 1000 }: WorkerPoolOptions = {}) {
    this.#size = Math.max(1, size)
    this.#window = Math.max(1, windowBytes)
    this.#idleMs = Math.max(0, idleMs)
  }

  /** Threads running now (tests watch workers retire). */
  get threads(): number {
    return this.#slots.length
  }

  #spawn(): Slot {
    // A small young generation: a worker's garbage is small objects per chunk, and the default let it keep ~5 MiB more resident.
    const worker = new Worker(new URL('./pipeline-worker.js', import.meta.url), { workerData: { windowBytes: this.#window }, resourceLimits: { maxYoungGenerationSizeMb: 4 } })
    const slot: Slot = { worker, streams: new Map(), retirement: undefined }
    worker.on('message', (message: FromWorker) => slot.streams.get(message.id)?.receive(message))
    const failAll = (error: Error): void => {
      const index = this.#slots.indexOf(slot)
      if (index >= 0) this.#slots.splice(index, 1)
      clearTimeout(slot.retirement)
      for (const stream of slot.streams.values()) stream.destroy(error)
      slot.streams.clear()
    }
    worker.on('error', failAll)
    worker.on('exit', (code) => {
      if (this.#slots.includes(slot)) failAll(new Error(`pipeline worker exited with code ${code}`))
    })
    worker.unref()
    this.#slots.push(slot)
    return slot
  }

  #pick(): Slot {
    const idle = this.#slots.reduce<Slot | undefined>((best, slot) => (best === undefined || slot.streams.size < best.streams.size ? slot : best), undefined)
    if (idle !== undefined && (idle.streams.size === 0 || this.#slots.length >= this.#size)) return idle
    return this.#spawn()
  }

  /** A Duplex running pipeline `name` in a worker: write input, read output. */
  transform(name: string): Duplex {
    const { id, post, release, slot } = this.#place()
    const stream = new PipelineStream(id, post, this.#window, release)
    slot.streams.set(id, stream)
    post({ type: 'open', id, name })
    return stream
  }

  /**
   * An XVA of `disks` (see formats/xva/xva-writer.ts), compressed as asked:
   * the blocks are read here, into memory the worker shares when the reader
   * allows it, and everything per byte runs in the worker. Each chunk yielded
   * is lent: give it back (formats/lending.ts) once it is sent.
   */
  async *encodeXva(description: XvaDescription, disks: readonly DiskSource[], compression: Compression, { now = new Date(), md5 }: XvaOptions = {}): AsyncGenerator<Buffer> {
    const { stream, feeding } = this.#startXva(description, disks, compression, { now, md5 })
    try {
      yield* stream.chunks()
    } finally {
      stream.stop()
      await feeding
    }
  }

  /**
   * An XVA of `disks` as encodeXva's, written by the worker into `file`
   * (workers/file-output.ts): the blocks are still read here, but no byte of
   * the archive comes back to this thread, and the kernel's copies of the
   * writes run on the worker's thread. Settles with the archive's size, or
   * with the error that stopped it, and in either case only once the worker
   * no longer touches the file, which the caller may then close.
   */
  async writeXva(description: XvaDescription, disks: readonly DiskSource[], compression: Compression, file: XvaFile, { now = new Date(), md5 }: XvaOptions = {}): Promise<number> {
    const { stream, feeding } = this.#startXva(description, disks, compression, { now, md5, file })
    try {
      return await stream.written()
    } finally {
      stream.stop()
      await feeding
      await stream.workerDone
    }
  }

  #startXva(
    description: XvaDescription,
    disks: readonly DiskSource[],
    compression: Compression,
    { now, md5, file }: { now: Date; md5: ((hex: string) => void) | undefined; file?: XvaFile },
  ): { stream: XvaStream; feeding: Promise<void> } {
    const { id, post, release, slot } = this.#place()
    const inputBytes = (file === undefined ? XVA_INPUT_SLOTS : XVA_FILE_INPUT_SLOTS) * INPUT_SLOT_SIZE
    const idle = this.#idleXvaMemory.findIndex((candidate) => candidate.input.byteLength === inputBytes)
    const memory = idle >= 0 ? (this.#idleXvaMemory.splice(idle, 1)[0] as XvaMemory) : { input: new SharedArrayBuffer(inputBytes), output: new SharedArrayBuffer(XVA_OUTPUT_SLOTS * OUTPUT_SLOT_SIZE) }
    const recycle = (done: XvaMemory): void => {
      if (this.#idleXvaMemory.length < IDLE_XVA_MEMORY) this.#idleXvaMemory.push(done)
    }
    const stream = new XvaStream(id, memory, post, release, recycle, md5)
    slot.streams.set(id, stream)
    const shapes = disks.map(({ size, allocated }) => ({ size, allocated }))
    post({ type: 'xva-open', id, description, disks: shapes, compression, now: now.getTime(), input: memory.input, output: memory.output, md5: md5 !== undefined, ...(file === undefined ? {} : { file }) })
    const feeding = (async () => {
      for (const [disk, source] of disks.entries()) {
        for await (const block of source.read(() => stream.slotBuffer())) {
          if (stream.stopped) {
            giveBack(block.data)
            return
          }
          await stream.feed(disk, block)
        }
      }
    })().catch((error: unknown) => stream.fail(error instanceof Error ? error : new Error(String(error))))
    return { stream, feeding }
  }

  #place(): { id: number; post: Post; release: () => void; slot: Slot } {
    const slot = this.#pick()
    const id = this.#nextId++
    const post: Post = (message, transfer = []) => slot.worker.postMessage(message, transfer)
    const release = (): void => {
      if (!slot.streams.delete(id) || slot.streams.size > 0) return
      slot.worker.unref()
      slot.retirement = setTimeout(() => this.#retire(slot), this.#idleMs).unref()
    }
    clearTimeout(slot.retirement)
    slot.retirement = undefined
    slot.worker.ref()
    return { id, post, release, slot }
  }

  /**
   * Ends an idle worker, which frees its heap at once. The idle XVA memory
   * stays: dropped, it would be freed only by a full collection, which this
   * process rarely needs, and each new export would add 12 MiB more.
   */
  #retire(slot: Slot): void {
    const index = this.#slots.indexOf(slot)
    if (index < 0 || slot.streams.size > 0) return
    this.#slots.splice(index, 1)
    void slot.worker.terminate()
  }

  async close(): Promise<void> {
    const slots = this.#slots.splice(0)
    for (const slot of slots) clearTimeout(slot.retirement)
    // Ended first: a stream destroyed lets its caller close the file a worker writes into (writeXva).
    await Promise.all(slots.map((slot) => slot.worker.terminate()))
    for (const slot of slots) for (const stream of slot.streams.values()) stream.destroy(new Error('worker pool closed'))
  }
}
