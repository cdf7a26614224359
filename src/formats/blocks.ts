/**
 * The unit every codec exchanges with a disk: 2 MiB blocks addressed by index,
 * the VHD block size and the granularity of the driver's allocation maps.
 */
export const BLOCK_SIZE = 2 * 1024 * 1024

export interface DiskBlock {
  readonly index: number
  /** exactly BLOCK_SIZE bytes, also for the last block of a disk whose size is not a multiple of it */
  readonly data: Buffer
}

/**
 * A disk as the encoders take it: its size, the ascending indexes of the blocks
 * holding data (known before reading any), and those blocks in the same order.
 */
export interface DiskContent {
  readonly size: number
  readonly allocated: readonly number[]
  readonly blocks: AsyncIterable<DiskBlock>
}

/**
 * A disk to be read as it is encoded: its blocks are read only when asked,
 * into the buffers `buffer` gives when the reader honours it (DiskReadOptions).
 */
export interface DiskSource {
  readonly size: number
  readonly allocated: readonly number[]
  read(buffer: () => Promise<Buffer>): AsyncIterable<DiskBlock>
}

export function blockCount(size: number): number {
  return Math.ceil(size / BLOCK_SIZE)
}

// A view into a larger allocation on purpose: consumers that transfer whole
// ArrayBuffers to worker threads (workers/pool.ts) copy views instead, so the
// shared zero block can never be detached.
const zeroBlock = Buffer.alloc(BLOCK_SIZE + 1).subarray(0, BLOCK_SIZE)

export function isZero(data: Buffer): boolean {
  if (data.length === BLOCK_SIZE) return data.equals(zeroBlock)
  for (let offset = 0; offset < data.length; offset += BLOCK_SIZE) {
    const part = data.subarray(offset, Math.min(data.length, offset + BLOCK_SIZE))
    if (!part.equals(zeroBlock.subarray(0, part.length))) return false
  }
  return true
}

/** A shared, read-only zero block: callers must never write into it. */
export function zeros(length = BLOCK_SIZE): Buffer {
  return length <= BLOCK_SIZE ? zeroBlock.subarray(0, length) : Buffer.alloc(length)
}

/**
 * Pulls blocks from an ascending iterable one index at a time, checking the
 * producer keeps its promise (ascending, only announced indexes, full size).
 */
export class AscendingBlocks {
  readonly #iterator: AsyncIterator<DiskBlock>
  #last = -1

  constructor(blocks: AsyncIterable<DiskBlock>) {
    this.#iterator = blocks[Symbol.asyncIterator]()
  }

  async take(index: number): Promise<Buffer> {
    const next = await this.#iterator.next()
    if (next.done === true) throw new Error(`block source ended before block ${index}`)
    const block = next.value
    if (block.index !== index || block.index <= this.#last) {
      throw new Error(`block source gave block ${block.index} where block ${index} was announced`)
    }
    if (block.data.length !== BLOCK_SIZE) throw new Error(`block ${index} has ${block.data.length} bytes`)
    this.#last = index
    return block.data
  }

  async close(): Promise<void> {
    await this.#iterator.return?.()
  }
}
