import { AscendingBlocks, BLOCK_SIZE, zeros, type DiskBlock } from '../blocks.js'

/** A byte range of a disk, `end` exclusive (HTTP's inclusive last byte + 1). */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

export interface RawStreamSource {
  readonly size: number
  /** ascending indexes of the blocks `blocks` yields; every other block reads as zeros */
  readonly allocated: readonly number[]
  readonly blocks: AsyncIterable<DiskBlock>
}

/** The allocated blocks a range touches: the only ones a ranged raw stream reads. */
export function blocksInRange(allocated: readonly number[], range: ByteRange): number[] {
  const first = Math.floor(range.start / BLOCK_SIZE)
  const last = Math.ceil(range.end / BLOCK_SIZE)
  return allocated.filter((index) => index >= first && index < last)
}

/** The whole disk, or `range` of it, clamped to the size. */
export function rawRange(size: number, range?: ByteRange): ByteRange {
  if (range === undefined) return { start: 0, end: size }
  if (!(range.start >= 0 && range.start <= range.end && range.end <= size)) {
    throw new RangeError(`range ${range.start}-${range.end} is outside a disk of ${size} bytes`)
  }
  return range
}

/**
 * The raw bytes of a disk (notes 3): exactly `range.end - range.start` bytes,
 * holes as zeros, the last block cut at the size. Pass `blocksInRange` of the
 * allocation as `allocated` so only the touched blocks are read.
 */
export async function* encodeRawStream(source: RawStreamSource, range?: ByteRange): AsyncGenerator<Buffer> {
  const { start, end } = rawRange(source.size, range)
  if (start === end) return
  const allocated = new Set(source.allocated)
  const blocks = new AscendingBlocks(source.blocks)
  try {
    const first = Math.floor(start / BLOCK_SIZE)
    const last = Math.ceil(end / BLOCK_SIZE)
    for (let index = first; index < last; index++) {
      const data = allocated.has(index) ? await blocks.take(index) : zeros()
      const blockStart = index * BLOCK_SIZE
      const from = Math.max(start, blockStart) - blockStart
      const to = Math.min(end, blockStart + BLOCK_SIZE) - blockStart
      yield from === 0 && to === BLOCK_SIZE ? data : data.subarray(from, to)
    }
  } finally {
    await blocks.close()
  }
}
