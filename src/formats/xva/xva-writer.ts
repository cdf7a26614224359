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
  // For `release`: the block each sent chunk was cut from, and per block the chunks not consumed yet.
  const sourceOf = new Map<Buffer, Buffer>()
  const unconsumed = new Map<Buffer, number>()
  const consumed = (data: Buffer): void => {
    const left = (unconsumed.get(data) ?? 0) - 1
    if (left > 0) unconsumed.set(data, left)
    else {
      unconsumed.delete(data)
      release?.(data)
    }
  }
  const mtime = now
  const add = (name: string, data: Buffer): Promise<void> =>
    new Promise((resolve, reject) => pack.entry({ name, size: data.length, mtime, mode: 0o644 }, data, (error) => (error ? reject(error) : resolve())))
  const produce = async (): Promise<void> => {
    await add('ova.xml', Buffer.from(xml, 'utf8'))
    for (const [i, content] of contents.entries()) {
      const ref = diskRefs[i] as string
      const allocated = new Set(content.allocated)
      const blocks = new AscendingBlocks(content.blocks)
      try {
        const chunks = Math.ceil(content.size / CHUNK_SIZE)
        for (let block = 0; block * CHUNKS_PER_BLOCK < chunks; block++) {
          const data = allocated.has(block) ? await blocks.take(block) : zeros()
          // One count for the producer itself, dropped once it is done with the block.
          if (release !== undefined && allocated.has(block)) unconsumed.set(data, 1)
          for (let part = 0; part < CHUNKS_PER_BLOCK; part++) {
            const index = block * CHUNKS_PER_BLOCK + part
            if (index >= chunks) break
            const length = Math.min(CHUNK_SIZE, content.size - index * CHUNK_SIZE)
            const chunk = data.subarray(part * CHUNK_SIZE, part * CHUNK_SIZE + length)
            if (index !== 0 && index !== chunks - 1 && (!allocated.has(block) || isZero(chunk))) continue
            const name = chunkName(ref, index)
            if (unconsumed.has(data)) {
              // tar-stream passes each data buffer on as the very object it was given.
              sourceOf.set(chunk, data)
              unconsumed.set(data, (unconsumed.get(data) ?? 0) + 1)
            }
            await add(name, chunk)
            await add(`${name}.xxhash`, Buffer.from(await xxhashMember(chunk), 'latin1'))
          }
          if (unconsumed.has(data)) consumed(data)
        }
      } finally {
        await blocks.close()
      }
    }
    pack.finalize()
  }
  const producing = produce().catch((error: unknown) => {
    pack.destroy(error instanceof Error ? error : new Error(String(error)))
  })
  try {
    for await (const chunk of pack as AsyncIterable<Buffer>) {
      yield chunk
      const data = sourceOf.get(chunk)
      if (data === undefined) continue
      sourceOf.delete(chunk)
      consumed(data)
    }
  } finally {
    pack.destroy()
    await producing
    for (const data of unconsumed.keys()) release?.(data)
  }
}
