import { createHash } from 'node:crypto'
import { once } from 'node:events'
import type { Transform } from 'node:stream'
import zstd from 'zstd-napi/binding.js'
import type { DiskBlock, DiskContent } from '../src/formats/blocks.js'
import { compressor, ZSTD_LEVEL } from '../src/formats/compression.js'
import { giveBack, lend } from '../src/formats/lending.js'
import { encodeXva } from '../src/formats/xva/xva-writer.js'
import type { FromWorker, XvaOpen } from './messages.js'
import { INPUT_SLOT_SIZE, OUTPUT_SLOT_SIZE, Slots, slotView } from './slots.js'

type Post = (message: FromWorker) => void

/** The blocks of one disk, in the order the main thread sends them. */
class BlockQueue implements AsyncIterable<DiskBlock> {
  readonly #ready: DiskBlock[] = []
  #waiting: ((block: IteratorResult<DiskBlock>) => void) | undefined
  #closed = false

  push(block: DiskBlock): void {
    const waiting = this.#waiting
    this.#waiting = undefined
    if (waiting === undefined) this.#ready.push(block)
    else waiting({ value: block, done: false })
  }

  close(): void {
    this.#closed = true
    this.#waiting?.({ value: undefined, done: true })
    this.#waiting = undefined
  }

  [Symbol.asyncIterator](): AsyncIterator<DiskBlock> {
    return {
      next: () => {
        const block = this.#ready.shift()
        if (block !== undefined) return Promise.resolve({ value: block, done: false })
        if (this.#closed) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve) => (this.#waiting = resolve))
      },
    }
  }
}

/**
 * Fills output slots in order. A slot is posted when full or at the end; a
 * sink may post what it holds so far (`flush(false)`) and go on filling the
 * same slot after it.
 */
class SlotWriter {
  readonly #slots: Slots
  readonly #post: (slot: number, offset: number, length: number, last: boolean) => void
  #slot: number | undefined
  /** where the bytes not posted yet start in the slot */
  #posted = 0
  #filled = 0

  constructor(slots: Slots, post: (slot: number, offset: number, length: number, last: boolean) => void) {
    this.#slots = slots
    this.#post = post
  }

  /** Where the next bytes go: the free end of the current slot, waiting for a slot if none is free. */
  room(): Buffer | Promise<Buffer> {
    if (this.#slot !== undefined) return this.#slots.view(this.#slot).subarray(this.#filled)
    const slot = this.#slots.tryTake()
    if (slot !== undefined) return this.#open(slot)
    return this.#slots.take().then((taken) => this.#open(taken))
  }

  #open(slot: number): Buffer {
    this.#slot = slot
    this.#posted = 0
    this.#filled = 0
    return this.#slots.view(slot)
  }

  /** `length` bytes were written at the start of the last room. */
  advance(length: number): void {
    this.#filled += length
    if (this.#filled === this.#slots.size) this.flush()
  }

  /** Posts the bytes written and not posted yet; `last` gives the slot up, else the next bytes follow them in it. */
  flush(last = true): void {
    if (this.#slot === undefined || this.#filled === this.#posted) return
    this.#post(this.#slot, this.#posted, this.#filled - this.#posted, last)
    this.#posted = this.#filled
    if (last) this.#slot = undefined
  }

  async copy(bytes: Buffer): Promise<void> {
    for (let offset = 0; offset < bytes.length; ) {
      const room = await this.room()
      const length = Math.min(room.length, bytes.length - offset)
      bytes.copy(room, 0, offset, offset + length)
      offset += length
      this.advance(length)
    }
  }
}

/** What the archive goes through before the output slots: each piece is fully consumed when `write` settles. */
interface Sink {
  write(piece: Buffer): Promise<void> | undefined
  end(): Promise<void>
}

/** zstd straight into the output slots: no buffer of its own, no copy. */
class ZstdSink implements Sink {
  readonly #context = new zstd.CCtx()
  readonly #out: SlotWriter

  constructor(out: SlotWriter) {
    this.#out = out
    // As formats/compression.ts's compressor: its level, a checksum for `zstd -t`.
    this.#context.setParameter(zstd.CParameter.compressionLevel, ZSTD_LEVEL)
    this.#context.setParameter(zstd.CParameter.checksumFlag, 1)
  }

  write(piece: Buffer): Promise<void> | undefined {
    let input = piece
    while (input.length > 0) {
      const room = this.#out.room()
      if (room instanceof Promise) return room.then(() => this.write(input))
      const [, produced, consumed] = this.#context.compressStream2(room, input, zstd.EndDirective.continue)
      this.#out.advance(produced)
      input = input.subarray(consumed)
    }
    return undefined
  }

  async end(): Promise<void> {
    for (;;) {
      const room = await this.#out.room()
      const [remaining, produced] = this.#context.compressStream2(room, Buffer.alloc(0), zstd.EndDirective.end)
      this.#out.advance(produced)
      if (remaining === 0) return
    }
  }
}

/**
 * The plain archive. In place, a chunk cut from a block in an input slot is
 * posted as that range of the slot, and only what lies between chunks (tar
 * headers and padding, `.xxhash` members, ova.xml) is copied into the output
 * slots; otherwise everything is copied. Copying every chunk cost the worker
 * 0.03 to 0.09 s of CPU per GiB, plus an output slot's round trip between the
 * threads per MiB (bench/RESULTS.md).
 */
class PlainSink implements Sink {
  readonly #out: SlotWriter
  readonly #input: SharedArrayBuffer | undefined
  readonly #send: (chunk: Buffer) => void

  /** `input`: the memory whose ranges are sent in place; undefined copies every piece */
  constructor(out: SlotWriter, input: SharedArrayBuffer | undefined, send: (chunk: Buffer) => void) {
    this.#out = out
    this.#input = input
    this.#send = send
  }

  write(piece: Buffer): Promise<void> | undefined {
    if (this.#input === undefined || piece.buffer !== this.#input) return this.#out.copy(piece)
    // What was copied before the chunk goes first, so the main thread gets the pieces in the archive's order.
    this.#out.flush(false)
    this.#send(piece)
    return undefined
  }

  async end(): Promise<void> {}
}

/** gzip through zlib's stream (it keeps no input once a write's callback ran), its output copied into the slots. */
class GzipSink implements Sink {
  readonly #gzip: Transform = compressor('gzip')
  readonly #out: SlotWriter
  readonly #output: Buffer[] = []

  constructor(out: SlotWriter) {
    this.#out = out
    this.#gzip.on('data', (chunk: Buffer) => this.#output.push(chunk))
  }

  async write(piece: Buffer): Promise<void> {
    await new Promise<void>((resolve, reject) => this.#gzip.write(piece, (error) => (error ? reject(error) : resolve())))
    await this.#drain()
  }

  async end(): Promise<void> {
    const ended = once(this.#gzip, 'end')
    this.#gzip.end()
    await ended
    await this.#drain()
  }

  async #drain(): Promise<void> {
    for (let chunk = this.#output.shift(); chunk !== undefined; chunk = this.#output.shift()) await this.#out.copy(chunk)
  }
}

/**
 * One XVA export's per-byte work in a worker: tar framing, the XXH64 of every
 * chunk, the compression and, for a backup, the archive's MD5. Blocks arrive
 * in input slots, which go back to the main thread as soon as the archive no
 * longer reads them (a plain archive's chunks leave as ranges of them, which
 * the main thread keeps until sent); the rest of the archive leaves in output
 * slots, which come back once sent.
 */
export class XvaJob {
  readonly #queues: BlockQueue[]
  readonly #input: SharedArrayBuffer
  readonly #output: Slots
  readonly #post: Post
  readonly #open: XvaOpen
  #aborted = false

  constructor(open: XvaOpen, post: Post) {
    this.#open = open
    this.#post = post
    this.#input = open.input
    this.#output = new Slots(open.output, OUTPUT_SLOT_SIZE)
    this.#queues = open.disks.map(() => new BlockQueue())
  }

  block(disk: number, index: number, slot: number): void {
    const data = lend(slotView(this.#input, INPUT_SLOT_SIZE, slot), () => this.#post({ type: 'xva-input-free', id: this.#open.id, slot }))
    this.#queues[disk]?.push({ index, data })
  }

  outputFree(slot: number): void {
    this.#output.free(slot)
  }

  abort(): void {
    this.#aborted = true
    this.#output.close(new Error('XVA export aborted'))
    for (const queue of this.#queues) queue.close()
  }

  /** Encodes the whole archive; settles once its last byte is posted, or with the error that stopped it. */
  async run(): Promise<void> {
    const { id, description, disks, compression, now } = this.#open
    const md5 = this.#open.md5 ? createHash('md5') : undefined
    const out = new SlotWriter(this.#output, (slot, offset, length, last) => {
      // A range is final when posted, and ranges are posted in the archive's order.
      md5?.update(this.#output.view(slot).subarray(offset, offset + length))
      this.#post({ type: 'xva-output', id, slot, offset, length, last })
    })
    const sendInput = (chunk: Buffer): void => {
      md5?.update(chunk)
      this.#post({ type: 'xva-input-range', id, slot: Math.floor(chunk.byteOffset / INPUT_SLOT_SIZE), offset: chunk.byteOffset % INPUT_SLOT_SIZE, length: chunk.length })
    }
    const sink = compression === 'zstd' ? new ZstdSink(out) : compression === 'gzip' ? new GzipSink(out) : new PlainSink(out, this.#open.inPlace ? this.#input : undefined, sendInput)
    const contents: DiskContent[] = disks.map((disk, i) => ({ size: disk.size, allocated: disk.allocated, blocks: this.#queues[i] as BlockQueue }))
    for await (const piece of encodeXva(description, contents, { now: new Date(now), release: giveBack })) {
      await sink.write(piece)
      if (this.#aborted) return
    }
    await sink.end()
    out.flush()
    if (md5 !== undefined) this.#post({ type: 'xva-md5', id, hex: md5.digest('hex') })
  }
}
