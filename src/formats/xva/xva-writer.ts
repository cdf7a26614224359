import tar from 'tar-stream'
import { AscendingBlocks, BLOCK_SIZE, isZero, zeros, type DiskContent } from '../blocks.js'
import { xxhashMember } from './chunk-checksum.js'
import { buildOvaXml, type XvaDescription } from './ova-xml.js'

/** XVA chunks are 1 MiB slices of the disk (notes 2.3). */
export const CHUNK_SIZE = 1024 * 1024
const CHUNKS_PER_BLOCK = BLOCK_SIZE / CHUNK_SIZE

export const chunkName = (ref: string, index: number): string => `${ref}/${String(index).padStart(8, '0')}`

export interface EncodeXvaOptions {
  /** the archive's timestamps (default: now) */
  readonly now?: Date
  /**
   * Called once with each block's data when no byte of it will be read again:
   * after the consumer asked for the piece following the block's last one, or
   * at once for a block none of whose chunks is sent. Only for a consumer done
   * with each piece when it asks for the next (one that copies or compresses
   * it); a socket or a file stream still holding pieces must not set it.
   */
  readonly release?: (data: Buffer) => void
}

/**
 * Writes an XVA (notes 2.2–2.6): ova.xml first, then each disk in ref order,
 * its 1 MiB chunks each followed by a `.xxhash`; all-zero chunks are left out
 * except the first and the last, which is short when the size is not a
 * multiple of 1 MiB (XAPI style, so the declared size stays exact). `contents`
 * match `description.disks` one for one and their sizes must agree.
 * Backpressure: the next member is produced only once tar-stream took the last one.
 */
export async function* encodeXva(description: XvaDescription, contents: readonly DiskContent[], { now = new Date(), release }: EncodeXvaOptions = {}): AsyncGenerator<Buffer> {
  if (contents.length !== description.disks.length) throw new RangeError(`${description.disks.length} disks described, ${contents.length} given`)
  description.disks.forEach((disk, i) => {
    if (contents[i]?.size !== disk.virtual_size) throw new RangeError(`disk ${i} is ${contents[i]?.size} bytes, described as ${disk.virtual_size}`)
  })
  const { xml, diskRefs } = buildOvaXml(description, now)
  const pack = tar.pack()
  const members = new Members(pack, now, release)
  const produce = async (): Promise<void> => {
    await members.add('ova.xml', Buffer.from(xml, 'utf8'))
    for (const [i, content] of contents.entries()) await members.addDisk(diskRefs[i] as string, content)
    pack.finalize()
  }
  const producing = produce().catch((error: unknown) => {
    pack.destroy(error instanceof Error ? error : new Error(String(error)))
  })
  try {
    for await (const chunk of pack as AsyncIterable<Buffer>) {
      yield chunk
      members.sent(chunk)
    }
  } finally {
    pack.destroy()
    await producing
    members.releaseAll()
  }
}

/**
 * The members of one archive, added to its tar pack. The work per chunk is
 * split over small methods: as one function it took ~200 ms of optimizing
 * compilation per worker thread, recompiled after each deoptimization.
 */
class Members {
  readonly #pack: tar.Pack
  readonly #mtime: Date
  readonly #release: ((data: Buffer) => void) | undefined
  // For `release`: the block each sent chunk was cut from, and per block the chunks not consumed yet.
  readonly #sourceOf = new Map<Buffer, Buffer>()
  readonly #unconsumed = new Map<Buffer, number>()

  constructor(pack: tar.Pack, mtime: Date, release: ((data: Buffer) => void) | undefined) {
    this.#pack = pack
    this.#mtime = mtime
    this.#release = release
  }

  add(name: string, data: Buffer): Promise<void> {
    return new Promise((resolve, reject) =>
      this.#pack.entry({ name, size: data.length, mtime: this.#mtime, mode: 0o644 }, data, (error) => (error ? reject(error) : resolve())),
    )
  }

  async addDisk(ref: string, content: DiskContent): Promise<void> {
    const allocated = new Set(content.allocated)
    const blocks = new AscendingBlocks(content.blocks)
    const chunks = Math.ceil(content.size / CHUNK_SIZE)
    // Worked out once: chunk offsets pass 2^31 on larger disks, a slow path for the per-chunk code.
    const lastLength = content.size - (chunks - 1) * CHUNK_SIZE
    try {
      for (let block = 0; block * CHUNKS_PER_BLOCK < chunks; block++) {
        if (allocated.has(block)) await this.#addBlock(ref, block, await blocks.take(block), chunks, lastLength)
        else await this.#addZeroBlock(ref, block, chunks, lastLength)
      }
    } finally {
      await blocks.close()
    }
  }

  /** A block never written: only a first or last chunk is sent, all zeros. */
  async #addZeroBlock(ref: string, block: number, chunks: number, lastLength: number): Promise<void> {
    for (let part = 0; part < CHUNKS_PER_BLOCK; part++) {
      const index = block * CHUNKS_PER_BLOCK + part
      if (index === 0 || index === chunks - 1) await this.#addChunk(ref, index, zeros(index === chunks - 1 ? lastLength : CHUNK_SIZE))
    }
  }

  async #addBlock(ref: string, block: number, data: Buffer, chunks: number, lastLength: number): Promise<void> {
    const tracked = this.#release !== undefined
    // One count for the producer itself, dropped once it is done with the block.
    if (tracked) this.#unconsumed.set(data, 1)
    for (let part = 0; part < CHUNKS_PER_BLOCK; part++) {
      const index = block * CHUNKS_PER_BLOCK + part
      if (index >= chunks) break
      const chunk = data.subarray(part * CHUNK_SIZE, part * CHUNK_SIZE + (index === chunks - 1 ? lastLength : CHUNK_SIZE))
      if (index !== 0 && index !== chunks - 1 && isZero(chunk)) continue
      if (tracked) {
        // tar-stream passes each data buffer on as the very object it was given.
        this.#sourceOf.set(chunk, data)
        this.#unconsumed.set(data, (this.#unconsumed.get(data) ?? 0) + 1)
      }
      await this.#addChunk(ref, index, chunk)
    }
    if (tracked) this.#consumed(data)
  }

  async #addChunk(ref: string, index: number, chunk: Buffer): Promise<void> {
    const name = chunkName(ref, index)
    await this.add(name, chunk)
    await this.add(`${name}.xxhash`, Buffer.from(xxhashMember(chunk), 'latin1'))
  }

  /** The consumer asked for the piece after `chunk`: it is done with it. */
  sent(chunk: Buffer): void {
    const data = this.#sourceOf.get(chunk)
    if (data === undefined) return
    this.#sourceOf.delete(chunk)
    this.#consumed(data)
  }

  #consumed(data: Buffer): void {
    const left = (this.#unconsumed.get(data) ?? 0) - 1
    if (left > 0) this.#unconsumed.set(data, left)
    else {
      this.#unconsumed.delete(data)
      this.#release?.(data)
    }
  }

  /** Gives back the blocks still held when the archive stops early. */
  releaseAll(): void {
    for (const data of this.#unconsumed.keys()) this.#release?.(data)
    this.#unconsumed.clear()
  }
}
