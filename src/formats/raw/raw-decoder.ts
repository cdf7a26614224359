import { BLOCK_SIZE, isZero, type DiskBlock } from '../blocks.js'
import { giveBack } from '../lending.js'
import { ByteReader } from '../byte-reader.js'
import { invalidDiskStream } from '../stream-error.js'

/**
 * Cuts a raw stream into 2 MiB blocks and yields only those holding a non-zero
 * byte, so the writer leaves holes (notes 3: zero detection is an order of
 * magnitude cheaper than writing). The last partial block is zero padded.
 * With `size`, the input must be exactly that long; the generator returns the
 * number of bytes read. A yielded block may come from the block pool: its
 * last user may give it back.
 */
export async function* decodeRawStream(input: AsyncIterable<Uint8Array>, size?: number): AsyncGenerator<DiskBlock, number> {
  const reader = new ByteReader(input)
  try {
    for (let index = 0; ; index++) {
      const wanted = size === undefined ? BLOCK_SIZE : Math.min(BLOCK_SIZE, size - index * BLOCK_SIZE)
      if (wanted <= 0) break
      const chunk = size === undefined ? await reader.readUpTo(wanted) : await reader.read(wanted, `raw block ${index}`)
      if (chunk.length === 0) break
      if (!isZero(chunk)) {
        const data = chunk.length === BLOCK_SIZE ? chunk : Buffer.concat([chunk, Buffer.alloc(BLOCK_SIZE - chunk.length)])
        yield { index, data }
      } else {
        // Nobody else saw it: a block from the pool goes back at once.
        giveBack(chunk)
      }
      if (chunk.length < BLOCK_SIZE) break
    }
    if (size !== undefined && !(await reader.atEnd())) {
      throw invalidDiskStream(`raw stream longer than the disk's ${size} bytes`, size, { size })
    }
    return reader.position
  } finally {
    await reader.close()
  }
}
