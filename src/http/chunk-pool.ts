/**
 * Buffers for the chunks of a streamed body, reused once the socket has taken
 * them. Each new buffer is an ArrayBuffer that V8 counts as external memory,
 * which is one of its triggers for a full collection, and a full collection's
 * marking grows with the records in memory: about a second at 50,000 VMs,
 * where an uncached listing made 3.6 MiB of new chunks (bench/RESULTS.md).
 */
export class ChunkPool {
  readonly #free: ArrayBuffer[] = []
  readonly #made = new WeakSet<ArrayBuffer>()

  constructor(
    /** bytes of each pooled buffer: chunks larger than this are not pooled */
    readonly capacity: number,
    /** free buffers kept, at most */
    readonly keep: number,
  ) {}

  /** `parts` (`size` bytes together) copied into a pooled buffer; undefined when they do not fit in one. */
  join(parts: readonly Buffer[], size: number): Buffer | undefined {
    if (size > this.capacity) return undefined
    let memory = this.#free.pop()
    if (memory === undefined) {
      memory = new ArrayBuffer(this.capacity)
      this.#made.add(memory)
    }
    const chunk = Buffer.from(memory, 0, size)
    let at = 0
    for (const part of parts) at += part.copy(chunk, at)
    return chunk
  }

  /** Takes back a chunk `join` made, once nothing reads it any more; any other buffer is ignored. */
  release(chunk: Buffer): void {
    const memory = chunk.buffer
    if (memory instanceof ArrayBuffer && this.#made.has(memory) && this.#free.length < this.keep && !this.#free.includes(memory)) this.#free.push(memory)
  }
}
