import { BLOCK_SIZE } from '../src/formats/blocks.js'

/** Input slots hold one block each. */
export const INPUT_SLOT_SIZE = BLOCK_SIZE
/**
 * Output slots are smaller: more of them in the same memory let the worker
 * run further ahead of the socket (measured: 8 × 1 MiB kept both busier than 4 × 2 MiB).
 */
export const OUTPUT_SLOT_SIZE = BLOCK_SIZE / 2

/** A slot's bytes (its first `length`), without copying them. */
export const slotView = (memory: SharedArrayBuffer, slotSize: number, slot: number, length = slotSize): Buffer => Buffer.from(memory, slot * slotSize, length)

/**
 * Fixed slots of memory shared by the main thread and a worker for the length
 * of one stream. Messages name slots by number, so no buffer is allocated,
 * moved or collected per block: the garbage collector of neither thread sees
 * the gigabytes going through (moved ArrayBuffers had started major
 * collections on the main thread several times a second).
 * The side that fills the slots keeps their free list; the other side hands a
 * slot back by message once it has read it.
 */
export class Slots {
  readonly memory: SharedArrayBuffer
  readonly size: number
  readonly #free: number[]
  readonly #waiting: Array<{ resolve: (slot: number) => void; reject: (error: Error) => void }> = []
  #closed: Error | undefined

  /** Slots of `size` bytes over `memory`, all free. */
  constructor(memory: SharedArrayBuffer, size: number) {
    this.memory = memory
    this.size = size
    const count = Math.floor(memory.byteLength / size)
    this.#free = Array.from({ length: count }, (_, slot) => count - 1 - slot)
  }

  view(slot: number, length = this.size): Buffer {
    return slotView(this.memory, this.size, slot, length)
  }

  /** A free slot now, or undefined when all are in use. */
  tryTake(): number | undefined {
    return this.#closed === undefined ? this.#free.pop() : undefined
  }

  /** A free slot, once one is; rejects once the slots are closed. */
  take(): Promise<number> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed)
    const slot = this.#free.pop()
    if (slot !== undefined) return Promise.resolve(slot)
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }))
  }

  free(slot: number): void {
    const waiter = this.#waiting.shift()
    if (waiter === undefined) this.#free.push(slot)
    else waiter.resolve(slot)
  }

  /** Fails every waiting and later take: the stream is over. */
  close(error: Error): void {
    this.#closed ??= error
    for (const waiter of this.#waiting.splice(0)) waiter.reject(error)
  }
}
