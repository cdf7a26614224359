import { gathered } from './pieced-block.js'
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

  /** A short input is a truncated stream, reported with `what`. */
  async #require(length: number, what: string): Promise<void> {
    if (!(await this.#fill(length))) {
      throw invalidDiskStream(`stream truncated in ${what}`, this.#position + this.#pendingBytes, { expected: what })
    }
  }

  /** Reads exactly `length` bytes; a short input is a truncated stream, reported with `what`. */
  async read(length: number, what: string): Promise<Buffer> {
    return gathered(await this.readPieces(length, what), length)
  }

  /**
   * Reads exactly `length` bytes as the input's own chunks (views into them,
   * nothing copied), for a consumer that sends them on as they are.
   */
  async readPieces(length: number, what: string): Promise<Buffer[]> {
    await this.#require(length, what)
    const pieces: Buffer[] = []
    let left = length
    while (left > 0) {
      const chunk = this.#pending[0] as Buffer
      if (chunk.length <= left) {
        pieces.push(chunk)
        this.#pending.shift()
        left -= chunk.length
      } else {
        pieces.push(chunk.subarray(0, left))
        this.#pending[0] = chunk.subarray(left)
        left = 0
      }
    }
    this.#pendingBytes -= length
    this.#position += length
    return pieces
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
