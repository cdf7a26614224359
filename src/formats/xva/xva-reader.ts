import { Readable } from 'node:stream'
import tar from 'tar-stream'
import { KeelError } from '../../errors.js'
import { BLOCK_SIZE, isZero, type DiskBlock } from '../blocks.js'
import { ovaNotSupported } from '../compression.js'
import { invalidDiskStream } from '../stream-error.js'
import { sha1Member, xxhashMember } from './chunk-checksum.js'
import { parseOvaXml, type XvaDescription, type XvaDiskEntry } from './ova-xml.js'

export interface XvaBlock extends DiskBlock {
  /** position of the disk in `description.disks` */
  readonly disk: number
}

export interface XvaReader {
  readonly description: XvaDescription
  /** Non-zero 2 MiB blocks of every disk, disk after disk, ascending within each. Every chunk checksum is verified. */
  readonly blocks: AsyncIterable<XvaBlock>
}

/** far larger than ova.xml or any chunk a known writer produces (1 MiB), small enough to bound memory */
const MAX_MEMBER = 16 * 1024 * 1024

interface Member {
  readonly name: string
  readonly size: number
  /** offset of the member's tar header in the (uncompressed) stream */
  readonly offset: number
  readonly data: Buffer
}

/**
 * Sequential tar members with the offsets of their headers. tar-stream does
 * the parsing; offsets are counted from header and padded sizes, exact for the
 * plain ustar members XVA writers produce.
 */
async function* members(input: AsyncIterable<Uint8Array>): AsyncGenerator<Member> {
  const extract = tar.extract()
  const source = Readable.from(input, { objectMode: false })
  source.on('error', (error) => extract.destroy(error))
  source.pipe(extract)
  let offset = 0
  try {
    for await (const entry of extract) {
      const { name, size = 0 } = entry.header
      if (size > MAX_MEMBER) {
        throw invalidDiskStream(`tar member ${name} of ${size} bytes is too large for an XVA`, offset, { member: name })
      }
      const parts: Buffer[] = []
      for await (const part of entry as AsyncIterable<Buffer>) parts.push(part)
      yield { name, size, offset, data: Buffer.concat(parts) }
      offset += 512 + Math.ceil(size / 512) * 512
    }
  } catch (error) {
    if (error instanceof KeelError) throw error
    const message = error instanceof Error ? error.message : String(error)
    throw invalidDiskStream(`bad tar archive (${message})`, offset, { reason: message })
  } finally {
    source.unpipe(extract)
    source.destroy()
    extract.destroy()
  }
}

/** Collects chunk bytes at disk offsets into 2 MiB blocks, yielding the non-zero ones. */
class BlockAssembler {
  #index = -1
  #block: Buffer | undefined

  *write(offset: number, data: Buffer): Generator<DiskBlock> {
    let done = 0
    while (done < data.length) {
      const at = offset + done
      const index = Math.floor(at / BLOCK_SIZE)
      if (index !== this.#index) {
        yield* this.flush()
        this.#index = index
        this.#block = Buffer.alloc(BLOCK_SIZE)
      }
      const within = at - index * BLOCK_SIZE
      const take = Math.min(data.length - done, BLOCK_SIZE - within)
      data.copy(this.#block as Buffer, within, done, done + take)
      done += take
    }
  }

  *flush(): Generator<DiskBlock> {
    const block = this.#block
    this.#block = undefined
    if (block !== undefined && !isZero(block)) yield { index: this.#index, data: block }
  }
}

async function verifyChecksum(chunk: Member, checksum: Member | undefined, expectedPrefix: string): Promise<void> {
  if (checksum === undefined) throw invalidDiskStream(`stream truncated after chunk ${chunk.name}: its checksum is missing`, chunk.offset + 512 + Math.ceil(chunk.size / 512) * 512)
  let computed: string
  if (checksum.name === `${expectedPrefix}.xxhash`) computed = xxhashMember(chunk.data)
  else if (checksum.name === `${expectedPrefix}.checksum`) computed = sha1Member(chunk.data)
  else throw invalidDiskStream(`expected the checksum of ${chunk.name}, found ${checksum.name}`, checksum.offset, { member: checksum.name })
  const stored = checksum.data.toString('latin1').trim()
  if (stored.toLowerCase() !== computed.toLowerCase()) {
    throw invalidDiskStream(`checksum mismatch for ${chunk.name}: archive says ${stored}, data gives ${computed}`, chunk.offset, {
      member: chunk.name,
      expected: stored,
      computed,
    })
  }
}

/**
 * Reads an XVA (uncompressed: pass it through `decompressor` first) the way
 * XAPI's importer does (notes 2.2–2.3): ova.xml first, then per streamed disk
 * in ref order, chunks with strictly increasing suffixes, each followed by its
 * checksum, gaps filled with zeros using the first chunk's length, until the
 * declared size is covered exactly.
 */
export async function openXvaStream(input: AsyncIterable<Uint8Array>): Promise<XvaReader> {
  const tarMembers = members(input)
  try {
    const first = await tarMembers.next()
    if (first.done === true) throw invalidDiskStream('empty archive: ova.xml expected', 0)
    const head = first.value
    if (head.name.toLowerCase().endsWith('.ovf')) throw ovaNotSupported()
    if (head.name !== 'ova.xml') throw invalidDiskStream(`the first member must be ova.xml, found ${head.name}`, 0, { member: head.name })
    let parsed
    try {
      parsed = parseOvaXml(head.data.toString('utf8'))
    } catch (error) {
      throw invalidDiskStream(`bad ova.xml: ${error instanceof Error ? error.message : String(error)}`, 512, { member: 'ova.xml' })
    }
    return { description: parsed.description, blocks: readDisks(tarMembers, parsed.entries) }
  } catch (error) {
    await tarMembers.return(undefined)
    throw error
  }
}

async function* readDisks(tarMembers: AsyncGenerator<Member>, entries: readonly XvaDiskEntry[]): AsyncGenerator<XvaBlock> {
  let lastOffset = 0
  const next = async (): Promise<Member | undefined> => {
    const result = await tarMembers.next()
    if (result.done === true) return undefined
    lastOffset = result.value.offset + 512 + Math.ceil(result.value.size / 512) * 512
    return result.value
  }
  try {
    for (const [disk, entry] of entries.entries()) {
      const assembler = new BlockAssembler()
      let previous = ''
      let previousIndex = -1
      let firstLength: number | undefined
      let offset = 0
      while (offset < entry.virtual_size) {
        const chunk = await next()
        if (chunk === undefined) {
          throw invalidDiskStream(`stream truncated: disk ${entry.ref} has ${offset} of its ${entry.virtual_size} bytes`, lastOffset, { disk: entry.ref })
        }
        const suffix = chunk.name.startsWith(`${entry.ref}/`) ? chunk.name.slice(entry.ref.length + 1) : undefined
        if (suffix === undefined || !/^\d+$/.test(suffix)) {
          throw invalidDiskStream(`expected a chunk of ${entry.ref}, found ${chunk.name}`, chunk.offset, { member: chunk.name, disk: entry.ref })
        }
        if (suffix <= previous) throw invalidDiskStream(`chunk ${chunk.name} is out of order`, chunk.offset, { member: chunk.name })
        await verifyChecksum(chunk, await next(), chunk.name)
        const index = Number(suffix)
        firstLength ??= chunk.size
        // XAPI's arithmetic: skipped indexes count as first-chunk-sized gaps, never index × 1 MiB (keep-alive chunks shift them).
        offset += (index - previousIndex - 1) * firstLength
        if (offset + chunk.size > entry.virtual_size) {
          throw invalidDiskStream(`chunk ${chunk.name} goes past the ${entry.virtual_size} bytes of its disk`, chunk.offset, { member: chunk.name })
        }
        for (const block of assembler.write(offset, chunk.data)) yield { ...block, disk }
        offset += chunk.size
        previous = suffix
        previousIndex = index
      }
      for (const block of assembler.flush()) yield { ...block, disk }
    }
  } finally {
    await tarMembers.return(undefined)
  }
}
