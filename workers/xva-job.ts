import { createHash, type Hash } from 'node:crypto'
import { once } from 'node:events'
import type { Transform } from 'node:stream'
import zstd from 'zstd-napi/binding.js'
import type { DiskBlock, DiskContent } from '../src/formats/blocks.js'
import { compressor, ZSTD_LEVEL } from '../src/formats/compression.js'
import { giveBack, lend } from '../src/formats/lending.js'
import { encodeXva } from '../src/formats/xva/xva-writer.js'
import { FILE_WRITE_BYTES, FileOutput } from './file-output.js'
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
 * The plain archive, copied into the output slots for a reader on the main
 * thread. Into a file, a chunk cut from a block in an input slot is written
 * from there, and only what lies between chunks (tar headers and padding,
 * `.xxhash` members, ova.xml) is copied into the output slots: copying every
 * chunk cost the worker 0.03 to 0.09 s of CPU per GiB (bench/RESULTS.md).
 */
class PlainSink implements Sink {
  readonly #out: SlotWriter
  readonly #inPlace: InPlace | undefined

  constructor(out: SlotWriter, inPlace?: InPlace) {
    this.#out = out
    this.#inPlace = inPlace
  }

  write(piece: Buffer): Promise<void> | undefined {
    if (this.#inPlace === undefined || piece.buffer !== this.#inPlace.input) return this.#out.copy(piece)
    const { file, md5 } = this.#inPlace
    // The bytes copied before the chunk go first. Its slot goes back to the reader once the encoder moves on: it is written now.
    this.#out.flush(false)
    md5?.update(piece)
    file.add(piece)
    file.write()
    return undefined
  }

  async end(): Promise<void> {}
}

/** Where a plain archive's chunks are written from their input slot: the slots' memory, the file, the archive's running MD5. */
interface InPlace {
  readonly input: SharedArrayBuffer
  readonly file: FileOutput
  readonly md5: Hash | undefined
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
 * longer reads them; the archive leaves in output slots, which come back once
 * sent. Given a file (XvaOpen.file), the job writes the archive there itself
 * (workers/file-output.ts): a plain archive's chunks straight from the input
 * slots, the rest from the output slots, each slot free again once written;
 * nothing of it is posted.
 */
export class XvaJob {
  readonly #queues: BlockQueue[]
  readonly #input: SharedArrayBuffer
  readonly #output: Slots
  readonly #post: Post
  readonly #open: XvaOpen
  readonly #file: FileOutput | undefined
  #aborted = false

  constructor(open: XvaOpen, post: Post) {
    this.#open = open
    this.#post = post
    this.#input = open.input
    this.#output = new Slots(open.output, OUTPUT_SLOT_SIZE)
    this.#queues = open.disks.map(() => new BlockQueue())
    this.#file = open.file === undefined ? undefined : new FileOutput(open.file)
  }

  block(disk: number, index: number, slot: number): void {
    const data = lend(slotView(this.#input, INPUT_SLOT_SIZE, slot), () => this.#post({ type: 'xva-input-free', id: this.#open.id, slot }))
    this.#queues[disk]?.push({ index, data })
  }

  outputFree(slot: number): void {
    this.#output.free(slot)
  }

  /** Stops the job: settles once nothing of it writes to its file any more. */
  async abort(): Promise<void> {
    this.#aborted = true
    this.#output.close(new Error('XVA export aborted'))
    for (const queue of this.#queues) queue.close()
    await this.#file?.close()
  }

  /** Encodes the whole archive; settles once its last byte is posted, or with the error that stopped it. */
  async run(): Promise<void> {
    try {
      await this.#encode()
    } finally {
      await this.#file?.close()
    }
  }

  async #encode(): Promise<void> {
    const { id, description, disks, compression, now } = this.#open
    const md5 = this.#open.md5 ? createHash('md5') : undefined
    const file = this.#file
    const out = new SlotWriter(this.#output, (slot, offset, length, last) => {
      // A range is final when posted, and ranges are posted in the archive's order.
      const range = this.#output.view(slot).subarray(offset, offset + length)
      md5?.update(range)
      if (file === undefined) {
        this.#post({ type: 'xva-output', id, slot, offset, length, last })
        return
      }
      // A slot given up is filled again once on disk; a part of one waits to go out with what follows it.
      file.add(range, last ? () => this.#output.free(slot) : undefined)
      if (last || file.pending >= FILE_WRITE_BYTES) file.write()
    })
    const sink = compression === 'zstd' ? new ZstdSink(out) : compression === 'gzip' ? new GzipSink(out) : file === undefined ? new PlainSink(out) : new PlainSink(out, { input: this.#input, file, md5 })
    const contents: DiskContent[] = disks.map((disk, i) => ({ size: disk.size, allocated: disk.allocated, blocks: this.#queues[i] as BlockQueue }))
    for await (const piece of encodeXva(description, contents, { now: new Date(now), release: giveBack })) {
      await sink.write(piece)
      if (this.#aborted) return
    }
    await sink.end()
    out.flush()
    if (file !== undefined) this.#post({ type: 'xva-written', id, bytes: await file.finish() })
    if (md5 !== undefined) this.#post({ type: 'xva-md5', id, hex: md5.digest('hex') })
  }
}
