import { BLOCK_SIZE } from './blocks.js'
import { lend } from './lending.js'

/**
 * Block-sized buffers handed out and taken back, so a stream moving gigabytes
 * does not allocate (and leave to the garbage collector) a fresh 2 MiB buffer
 * per block. Measured on an export at 1.5 GB/s: each fresh buffer counted as
 * external memory, V8 ran a full mark-compact every ~40 ms, the main thread
 * spent a third of its time there, and dead buffers piled up in RSS.
 *
 * Blocks are lent (formats/lending.ts): only the buffer objects this pool
 * handed out come back, each once, through `giveBack`; a view into one (a
 * range, a chunk) is never taken in. One never given back is simply collected.
 */
export class BlockPool {
  readonly #free: Buffer[] = []
  readonly #keep: number

  /** `keep`: how many idle buffers are held at most */
  constructor(keep: number) {
    this.#keep = keep
  }

  take(): Buffer {
    // allocUnsafeSlow: a buffer of its own, never a slice of node's shared pool.
    const buffer = this.#free.pop() ?? Buffer.allocUnsafeSlow(BLOCK_SIZE)
    return lend(buffer, () => this.#restore(buffer))
  }

  #restore(buffer: Buffer): void {
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
