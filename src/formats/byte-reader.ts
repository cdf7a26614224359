import { BLOCK_SIZE } from './blocks.js'
import { blockPool } from './block-pool.js'
import { invalidDiskStream } from './stream-error.js'

/**
 * Exact-length reads over a stream of chunks of any size, tracking the offset
 * so decoders can name where the input went wrong. Never reads backwards.
 */
export class ByteReader {
  readonly #iterator: AsyncIterator<Uint8Array>
  #pending: Buffer[] = []
  #pendingBytes = 0
  #position = 0
  #done = false

  constructor(input: AsyncIterable<Uint8Array>) {
    this.#iterator = input[Symbol.asyncIterator]()
  }

  /** bytes consumed so far */
  get position(): number {
    return this.#position
  }

  async #fill(length: number): Promise<boolean> {
    while (this.#pendingBytes < length && !this.#done) {
      const next = await this.#iterator.next()
      if (next.done === true) {
        this.#done = true
        break
      }
      const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength)
      if (chunk.length === 0) continue
      this.#pending.push(chunk)
      this.#pendingBytes += chunk.length
    }
    return this.#pendingBytes >= length
  }

  /** Reads exactly `length` bytes; a short input is a truncated stream, reported with `what`. */
  async read(length: number, what: string): Promise<Buffer> {
    if (!(await this.#fill(length))) {
      throw invalidDiskStream(`stream truncated in ${what}`, this.#position + this.#pendingBytes, { expected: what })
    }
    const first = this.#pending[0]
    let result: Buffer
    if (first !== undefined && first.length >= length) {
      result = first.subarray(0, length)
      if (first.length === length) this.#pending.shift()
      else this.#pending[0] = first.subarray(length)
    } else {
      // A whole block gathered from pieces comes from the pool: its last user may give it back.
      result = length === BLOCK_SIZE ? blockPool.take() : Buffer.allocUnsafe(length)
      let copied = 0
      while (copied < length) {
        const chunk = this.#pending[0] as Buffer
        const take = Math.min(chunk.length, length - copied)
        chunk.copy(result, copied, 0, take)
        copied += take
        if (take === chunk.length) this.#pending.shift()
        else this.#pending[0] = chunk.subarray(take)
      }
    }
    this.#pendingBytes -= length
    this.#position += length
    return result
  }

  /** Reads up to `length` bytes, fewer only at the end of the input. */
  async readUpTo(length: number): Promise<Buffer> {
    await this.#fill(length)
    return this.read(Math.min(length, this.#pendingBytes), 'data')
  }

  async skip(length: number, what: string): Promise<void> {
    let left = length
    while (left > 0) {
      const step = Math.min(left, 1024 * 1024)
      await this.read(step, what)
      left -= step
    }
  }

  async atEnd(): Promise<boolean> {
    return !(await this.#fill(1))
  }

  async close(): Promise<void> {
    if (!this.#done) await this.#iterator.return?.()
  }
}
