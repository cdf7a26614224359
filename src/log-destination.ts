import { write, writeSync } from 'node:fs'

const PIECE = 262144
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3
/** Pieces kept for reuse once written: one filling while one is written, and one spare. */
const SPARES = 2
/** UTF-16 code units of lines joined before they are encoded, about 40 request lines. */
const BATCH = 8192

/**
 * Where log lines go: joined as they come into one rope, encoded a batch of
 * 8 KiB at a time into a 256 KiB piece, which is written to the file
 * descriptor asynchronously when full or 100 ms after its first line,
 * whichever comes first, then reused. Encoded line by line, each line paid
 * node's call into V8 to flatten and encode a string: 2,500 instructions of a
 * single-object read's 80,000, against 1,300 a line in batches. Kept as separate
 * strings until the write (pino's destination, then an array joined at each
 * write), lines cost a microsecond of a 14 µs single-object read: flattening,
 * encoding, strings that lived too long. Fresh pieces cost more still: their
 * external memory brought full collections of the whole heap, and a write per
 * 64 KiB (a hand-off to the thread pool) showed on its own.
 * `flushSync` writes out what waits (clean stop, fatal error); lines written
 * meanwhile keep their order.
 */
export class LogDestination {
  readonly #fd: number
  #piece: Buffer = Buffer.allocUnsafeSlow(PIECE)
  #used = 0
  /** filled pieces (or overlong lines) waiting for the write under way */
  readonly #waiting: Buffer[] = []
  readonly #spares: Buffer[] = []
  /** lines not yet encoded, joined as V8 joins strings: a rope, flattened once per batch */
  #lines = ''
  #timer: NodeJS.Timeout | undefined
  #writing = false

  constructor(fd: number) {
    this.#fd = fd
  }

  write(line: string): boolean {
    this.#lines += line
    if (this.#lines.length >= BATCH) this.#encode()
    this.#timer ??= setTimeout(() => this.#flush(), 100).unref()
    return true
  }

  /** Encodes the lines waiting into the current piece, sealing it first when they might not fit. */
  #encode(): void {
    const lines = this.#lines
    if (lines.length === 0) return
    this.#lines = ''
    if (lines.length * MAX_BYTES_PER_UNIT > PIECE - this.#used) {
      this.#seal()
      if (lines.length * MAX_BYTES_PER_UNIT > PIECE) {
        this.#waiting.push(Buffer.from(lines))
        this.#flush()
        return
      }
      this.#flush()
    }
    this.#used += this.#piece.write(lines, this.#used)
  }

  flushSync(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#encode()
    this.#seal()
    // An asynchronous write may still be under way: its bytes were taken before these, so order holds.
    for (const bytes of this.#waiting.splice(0)) writeSync(this.#fd, bytes)
  }

  /** Moves the current piece, if it holds anything, to the queue of pieces to write. */
  #seal(): void {
    if (this.#used === 0) return
    this.#waiting.push(this.#piece.subarray(0, this.#used))
    this.#piece = this.#spares.pop() ?? Buffer.allocUnsafeSlow(PIECE)
    this.#used = 0
  }

  #flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    // One write at a time keeps lines in order; the next is started when this one ends.
    if (this.#writing) return
    this.#encode()
    this.#seal()
    const bytes = this.#waiting.shift()
    if (bytes === undefined) return
    this.#writing = true
    this.#writeOut(bytes, bytes)
  }

  #writeOut(whole: Buffer, rest: Buffer): void {
    write(this.#fd, rest, (error, written) => {
      // A pipe may take part of a piece; a log that cannot be written has nowhere to say so.
      if (error === null && written < rest.length) return this.#writeOut(whole, rest.subarray(written))
      this.#writing = false
      if (whole.buffer.byteLength === PIECE && this.#spares.length < SPARES) this.#spares.push(Buffer.from(whole.buffer))
      if (this.#waiting.length > 0) this.#flush()
      else if (this.#used > 0 || this.#lines.length > 0) this.#timer ??= setTimeout(() => this.#flush(), 100).unref()
    })
  }
}
