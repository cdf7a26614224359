import type { Writable } from 'node:stream'

const PIECE = 262144
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3
/** Pieces kept for reuse once written: one filling while one is written, and one spare. */
const SPARES = 2
/** UTF-16 code units of lines joined before they are encoded, about 40 request lines. */
const BATCH = 8192
const NEWLINE = 0x0a

export interface LogDestinationOptions {
  /** Bytes waiting to be written, about, at most: lines past it are dropped and counted. */
  readonly maxBuffered: number
  /** The line saying that `count` lines were dropped, written where they would have been. */
  readonly droppedLine: (count: number) => string
}

/**
 * Where log lines go: joined as they come into one rope, encoded a batch of
 * 8 KiB at a time into a 256 KiB piece, which is handed to the stream when
 * full or, the stream idle, 100 ms after its first line, and reused once
 * written. Encoded line by line, each line paid node's call into V8 to flatten
 * and encode a string: 2,500 instructions of a single-object read's 80,000,
 * against 1,300 a line in batches. pino's own destination (sonic-boom) measures
 * `Buffer.byteLength` of every line and of the string it joins it to: a
 * single-object read cost 50,300 instructions through it against 34,800 through
 * this one (bench/RESULTS.md, issue 26).
 *
 * The stream is process.stderr in the service: on a pipe or socket its writes
 * wait in libuv for the descriptor to be writable again (EAGAIN is retried
 * when the reader reads, never polled, and no thread-pool thread blocks on a
 * stalled reader, which would also hold `process.exit`), on a file they are
 * synchronous. One stream keeps the pieces in order, so `flush` only waits for
 * the stream to call back for the last one: nothing is written beside a write
 * in flight. Bytes handed and not yet written are bounded by `maxBuffered`;
 * lines past it are dropped, counted, and a line saying how many is written
 * before the next one kept.
 */
export class LogDestination {
  readonly #out: Writable
  readonly #maxBuffered: number
  readonly #droppedLine: (count: number) => string
  #piece: Buffer = Buffer.allocUnsafeSlow(PIECE)
  #used = 0
  readonly #spares: Buffer[] = []
  /** lines not yet encoded, joined as V8 joins strings: a rope, flattened once per batch */
  #lines = ''
  #timer: NodeJS.Timeout | undefined
  /** bytes handed to the stream and not yet written */
  #inFlight = 0
  #handed = 0
  #written = 0
  /** flushes waiting, each for the piece handed last when it was asked for */
  readonly #flushes: { readonly piece: number; readonly resolve: () => void }[] = []
  #dropped = 0
  /** lines dropped since the last line saying so */
  #unreported = 0

  constructor(out: Writable, options: LogDestinationOptions) {
    this.#out = out
    this.#maxBuffered = options.maxBuffered
    this.#droppedLine = options.droppedLine
    // A failed write's lines are counted by its callback; unheard, the error (EPIPE once the reader
    // is gone) would end the service.
    out.on('error', () => {})
  }

  /** Lines dropped past the bound or lost to a failed write, since the start. */
  get dropped(): number {
    return this.#dropped
  }

  write(line: string): boolean {
    if (this.#inFlight + this.#used + this.#lines.length + line.length > this.#maxBuffered) {
      this.#dropped++
      this.#unreported++
      return false
    }
    if (this.#unreported > 0) this.#report()
    this.#lines += line
    if (this.#lines.length >= BATCH) this.#encode()
    this.#timer ??= setTimeout(() => this.#handLater(), 100).unref()
    return true
  }

  /** Hands over every line written so far; resolves once the stream has written them. */
  flush(): Promise<void> {
    if (this.#unreported > 0) this.#report()
    this.#hand()
    if (this.#written === this.#handed) return Promise.resolve()
    return new Promise((resolve) => this.#flushes.push({ piece: this.#handed, resolve }))
  }

  #report(): void {
    this.#lines += this.#droppedLine(this.#unreported)
    this.#unreported = 0
  }

  /**
   * A piece is handed over unfilled only when the stream is idle: while it is not (a stalled
   * reader), each 100 ms would otherwise take a fresh 256 KiB piece for a few lines, and memory
   * would grow by pieces, not by what they hold. The write under way hands it when it ends.
   */
  #handLater(): void {
    this.#timer = undefined
    if (this.#inFlight === 0) this.#hand()
  }

  #hand(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#encode()
    this.#seal()
  }

  /** Encodes the lines waiting into the current piece, sealing it first when they might not fit. */
  #encode(): void {
    const lines = this.#lines
    if (lines.length === 0) return
    this.#lines = ''
    if (lines.length * MAX_BYTES_PER_UNIT > PIECE - this.#used) {
      this.#seal()
      if (lines.length * MAX_BYTES_PER_UNIT > PIECE) return this.#send(Buffer.from(lines))
    }
    this.#used += this.#piece.write(lines, this.#used)
  }

  /** Sends the current piece, if it holds anything, and takes a spare or a new one. */
  #seal(): void {
    if (this.#used === 0) return
    const bytes = this.#piece.subarray(0, this.#used)
    this.#piece = this.#spares.pop() ?? Buffer.allocUnsafeSlow(PIECE)
    this.#used = 0
    this.#send(bytes)
  }

  #send(bytes: Buffer): void {
    this.#inFlight += bytes.length
    this.#handed++
    this.#out.write(bytes, (error) => this.#done(bytes, error))
  }

  #done(bytes: Buffer, error: Error | null | undefined): void {
    this.#inFlight -= bytes.length
    this.#written++
    if (error !== null && error !== undefined) {
      const lost = linesIn(bytes)
      this.#dropped += lost
      this.#unreported += lost
    }
    if (bytes.buffer.byteLength === PIECE && this.#spares.length < SPARES) this.#spares.push(Buffer.from(bytes.buffer))
    if (this.#inFlight === 0 && this.#timer === undefined && (this.#used > 0 || this.#lines.length > 0)) this.#hand()
    while (this.#flushes[0] !== undefined && this.#flushes[0].piece <= this.#written) this.#flushes.shift()?.resolve()
  }
}

function linesIn(bytes: Buffer): number {
  let lines = 0
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) lines++
  return lines
}
