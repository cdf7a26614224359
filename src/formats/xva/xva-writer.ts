import tar from 'tar-stream'
import { AscendingBlocks, BLOCK_SIZE, isZero, zeros, type DiskContent } from '../blocks.js'
import { xxhashMember } from './chunk-checksum.js'
import { buildOvaXml, type XvaDescription } from './ova-xml.js'

/** XVA chunks are 1 MiB slices of the disk (notes 2.3). */
export const CHUNK_SIZE = 1024 * 1024
const CHUNKS_PER_BLOCK = BLOCK_SIZE / CHUNK_SIZE

export const chunkName = (ref: string, index: number): string => `${ref}/${String(index).padStart(8, '0')}`

/**
 * Writes an XVA (notes 2.2–2.6): ova.xml first, then each disk in ref order,
 * its 1 MiB chunks each followed by a `.xxhash`; all-zero chunks are left out
 * except the first and the last, which is short when the size is not a
 * multiple of 1 MiB (XAPI style, so the declared size stays exact). `contents`
 * match `description.disks` one for one and their sizes must agree.
 * Backpressure: the next member is produced only once tar-stream took the last one.
 */
export async function* encodeXva(description: XvaDescription, contents: readonly DiskContent[], now = new Date()): AsyncGenerator<Buffer> {
  if (contents.length !== description.disks.length) throw new RangeError(`${description.disks.length} disks described, ${contents.length} given`)
  description.disks.forEach((disk, i) => {
    if (contents[i]?.size !== disk.virtual_size) throw new RangeError(`disk ${i} is ${contents[i]?.size} bytes, described as ${disk.virtual_size}`)
  })
  const { xml, diskRefs } = buildOvaXml(description, now)
  const pack = tar.pack()
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
          for (let part = 0; part < CHUNKS_PER_BLOCK; part++) {
            const index = block * CHUNKS_PER_BLOCK + part
            if (index >= chunks) break
            const length = Math.min(CHUNK_SIZE, content.size - index * CHUNK_SIZE)
            const chunk = data.subarray(part * CHUNK_SIZE, part * CHUNK_SIZE + length)
            if (index !== 0 && index !== chunks - 1 && (!allocated.has(block) || isZero(chunk))) continue
            const name = chunkName(ref, index)
            await add(name, chunk)
            await add(`${name}.xxhash`, Buffer.from(await xxhashMember(chunk), 'latin1'))
          }
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
    for await (const chunk of pack as AsyncIterable<Buffer>) yield chunk
  } finally {
    pack.destroy()
    await producing
  }
}
