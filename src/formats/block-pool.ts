import { BLOCK_SIZE } from './blocks.js'

/**
 * Block-sized buffers handed out and taken back, so a stream moving gigabytes
 * does not allocate (and leave to the garbage collector) a fresh 2 MiB buffer
 * per block. Measured on an export at 1.5 GB/s: each fresh buffer counted as
 * external memory, V8 ran a full mark-compact every ~40 ms, the main thread
 * spent a third of its time there, and dead buffers piled up in RSS.
 *
 * Only the buffer objects this pool handed out come back, each once: a view
 * into one (a range, a chunk) or a shared constant is never taken in. Whoever
 * gives a buffer back must be its last user; one never given back is simply
 * collected.
 */
export class BlockPool {
  readonly #free: Buffer[] = []
  readonly #lent = new WeakSet<Buffer>()
  readonly #keep: number

  /** `keep`: how many idle buffers are held at most */
  constructor(keep: number) {
    this.#keep = keep
  }

  take(): Buffer {
    // allocUnsafeSlow: a buffer of its own, never a slice of node's shared pool.
    const buffer = this.#free.pop() ?? Buffer.allocUnsafeSlow(BLOCK_SIZE)
    this.#lent.add(buffer)
    return buffer
  }

  /** Takes a buffer back if it is one this pool lent and has not had back since. */
  give(buffer: Buffer): void {
    if (!this.#lent.has(buffer)) return
    this.#lent.delete(buffer)
    // A buffer moved to another thread is detached: nothing to keep.
    if (buffer.length === BLOCK_SIZE && this.#free.length < this.#keep) this.#free.push(buffer)
  }

  /** idle buffers held */
  get idle(): number {
    return this.#free.length
  }
}

/** The process's pool: enough idle blocks for a few streams at the highest read concurrency. */
export const blockPool = new BlockPool(16)
