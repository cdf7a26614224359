import { Duplex } from 'node:stream'
import { Worker } from 'node:worker_threads'
import { KeelError } from '../src/errors.js'
import { forTransfer, type FromWorker, type SerializedError, type ToWorker } from './messages.js'

export interface WorkerPoolOptions {
  /** worker threads at most (default 2: the machines we run on have 2 cores) */
  readonly size?: number
  /**
   * bytes in flight per stream and direction (default 8 MiB): memory per stream
   * stays near 2 × windowBytes plus one chunk. Counted in bytes because a
   * transform's output chunks can be far smaller than its input's.
   */
  readonly windowBytes?: number
}

interface Slot {
  readonly worker: Worker
  readonly streams: Map<number, PipelineStream>
}

function revive(error: SerializedError): Error {
  return error.code === undefined ? new Error(error.message) : new KeelError(error.code, error.message, error.data)
}

/**
 * The main-thread end of one pipeline running in a worker. Writes go to the
 * worker, results come back, both directions bounded to `windowBytes`.
 * Chunks written are moved, not copied, when they span their whole ArrayBuffer
 * (at least 64 KiB): the writer must not reuse them.
 */
class PipelineStream extends Duplex {
  readonly #post: (message: ToWorker, transfer?: ArrayBuffer[]) => void
  readonly #window: number
  readonly #release: () => void
  #inFlight = 0
  #blockedWrite: ((error?: Error | null) => void) | undefined
  #unackedBytes = 0
  #finished = false

  constructor(readonly id: number, post: (message: ToWorker, transfer?: ArrayBuffer[]) => void, window: number, release: () => void) {
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
 * One pool of worker threads for per-byte work (zstd, gzip, checksums), so it
 * never blocks the event loop. A pipeline is a name from workers/pipelines.ts
 * and its options; streams spread over the least busy worker. Idle workers do
 * not keep the process alive.
 */
export class WorkerPool {
  readonly #size: number
  readonly #window: number
  readonly #slots: Slot[] = []
  #nextId = 1

  constructor({ size = 2, windowBytes = 8 * 1024 * 1024 }: WorkerPoolOptions = {}) {
    this.#size = Math.max(1, size)
    this.#window = Math.max(1, windowBytes)
  }

  #spawn(): Slot {
    const worker = new Worker(new URL('./pipeline-worker.js', import.meta.url), { workerData: { windowBytes: this.#window } })
    const slot: Slot = { worker, streams: new Map() }
    worker.on('message', (message: FromWorker) => slot.streams.get(message.id)?.receive(message))
    const failAll = (error: Error): void => {
      this.#slots.splice(this.#slots.indexOf(slot), 1)
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
  transform(name: string, options: Record<string, unknown> = {}): Duplex {
    const slot = this.#pick()
    const id = this.#nextId++
    const post = (message: ToWorker, transfer: ArrayBuffer[] = []): void => slot.worker.postMessage(message, transfer)
    const stream = new PipelineStream(id, post, this.#window, () => {
      slot.streams.delete(id)
      if (slot.streams.size === 0) slot.worker.unref()
    })
    slot.streams.set(id, stream)
    slot.worker.ref()
    post({ type: 'open', id, name, options })
    return stream
  }

  async close(): Promise<void> {
    const slots = this.#slots.splice(0)
    for (const slot of slots) for (const stream of slot.streams.values()) stream.destroy(new Error('worker pool closed'))
    await Promise.all(slots.map((slot) => slot.worker.terminate()))
  }
}
