import { BLOCK_SIZE, blockCount, type DiskBlock } from '../blocks.js'
import { ByteReader } from '../byte-reader.js'
import { diskTooLarge, invalidDiskStream } from '../stream-error.js'
import { batBytes, decodeBat } from './bat.js'
import { hasSector, isFullBitmap, SECTORS_PER_BLOCK } from './bitmap.js'
import { BITMAP_SIZE, DiskType, FOOTER_SIZE, HEADER_OFFSET, HEADER_SIZE, PlatformCode, SECTOR_SIZE, UNUSED_BAT_ENTRY, VHD_MAX_SIZE } from './constants.js'
import { assertDynamicFooter, decodeFooter, type VhdFooter } from './footer.js'
import { decodeHeader, type VhdHeader } from './header.js'
import { decodeLocatorPath } from './parent-locator.js'

export interface DecodedVhdBlock extends DiskBlock {
  /**
   * Only for a differencing VHD whose block does not carry every sector: the
   * sector bitmap, clear bits meaning "the parent's sector".
   */
  readonly bitmap?: Buffer
}

export interface VhdStreamReader {
  readonly footer: VhdFooter
  readonly header: VhdHeader
  /** virtual size in bytes (footer currentSize) */
  readonly size: number
  /** parent file names found in the locators, once the blocks have been read past them */
  readonly parentPaths: string[]
  /**
   * Ascending indexes of the allocated blocks, read off the block allocation
   * table (and what precedes it) before any block: the rest of the stream
   * waits for `blocks`. Read once; `blocks` reads the table itself otherwise.
   */
  allocation(): Promise<number[]>
  /**
   * The allocated blocks in file order, which need not be index order (qemu,
   * XAPI and our own producer use index order, others may not). Ends after the
   * trailing footer has been checked against the leading one.
   */
  readonly blocks: AsyncIterable<DecodedVhdBlock>
}

type Region = { readonly offset: number; readonly length: number } & (
  | { readonly kind: 'bat' }
  | { readonly kind: 'locator'; readonly index: number }
  | { readonly kind: 'block'; readonly index: number }
)

const STORED_BLOCK = BITMAP_SIZE + BLOCK_SIZE

/**
 * Opens a VHD arriving as a stream (notes 1.12): reads and validates footer and
 * header right away, so the caller knows the size before any block; then reads
 * the BAT, locators and blocks strictly forward, skipping gaps. A block placed
 * before the BAT, overlapping regions, a truncated stream or trailing footer
 * that differs from the leading one fail with INVALID_DISK_STREAM and the offset.
 */
export async function openVhdStream(input: AsyncIterable<Uint8Array>): Promise<VhdStreamReader> {
  const reader = new ByteReader(input)
  try {
    const footerBytes = await reader.read(FOOTER_SIZE, 'VHD footer')
    const footer = decodeFooter(footerBytes, 0)
    assertDynamicFooter(footer, 0)
    if (footer.currentSize > VHD_MAX_SIZE) throw diskTooLarge(footer.currentSize, VHD_MAX_SIZE, 'VHD')
    const header = decodeHeader(await reader.read(HEADER_SIZE, 'VHD header'), HEADER_OFFSET, footer.currentSize)
    const parentPaths: string[] = []
    const regions = new RegionReader(reader, footer, header, parentPaths)
    return {
      footer,
      header,
      size: footer.currentSize,
      parentPaths,
      allocation: () => regions.allocation(),
      blocks: regions.blocks(footerBytes),
    }
  } catch (error) {
    await reader.close()
    throw error
  }
}

/** The regions after the header, strictly forward: the table and locators as they come, then the blocks it places. */
class RegionReader {
  readonly #reader: ByteReader
  readonly #footer: VhdFooter
  readonly #header: VhdHeader
  readonly #parentPaths: string[]
  readonly #queue: Region[]
  #allocated: number[] | undefined
  #end = 0

  constructor(reader: ByteReader, footer: VhdFooter, header: VhdHeader, parentPaths: string[]) {
    this.#reader = reader
    this.#footer = footer
    this.#header = header
    this.#parentPaths = parentPaths
    this.#queue = [{ kind: 'bat', offset: header.tableOffset, length: batBytes(header.maxTableEntries) }]
    if (footer.diskType === DiskType.differencing) {
      header.parentLocators.forEach((locator, index) => {
        if (locator.platformCode !== PlatformCode.none && locator.platformDataSpace > 0) {
          this.#queue.push({ kind: 'locator', index, offset: locator.platformDataOffset, length: locator.platformDataSpace })
        }
      })
    }
    this.#queue.sort((a, b) => a.offset - b.offset)
  }

  async allocation(): Promise<number[]> {
    while (this.#allocated === undefined) await this.#next()
    return [...this.#allocated]
  }

  async *blocks(footerBytes: Buffer): AsyncGenerator<DecodedVhdBlock> {
    try {
      while (this.#queue.length > 0) {
        const block = await this.#next()
        if (block !== undefined) yield block
      }
      await readTrailingFooter(this.#reader, footerBytes, this.#end)
    } finally {
      await this.#reader.close()
    }
  }

  /** Reads the next region: a block is returned, the table and locators are taken in. */
  async #next(): Promise<DecodedVhdBlock | undefined> {
    const reader = this.#reader
    const region = this.#queue.shift() as Region
    if (region.offset < reader.position) {
      throw invalidDiskStream(`VHD ${region.kind} at ${region.offset} overlaps data already read (the stream cannot go backwards)`, reader.position, {
        region: region.kind,
        regionOffset: region.offset,
      })
    }
    await reader.skip(region.offset - reader.position, `gap before VHD ${region.kind}`)
    let block: DecodedVhdBlock | undefined
    if (region.kind === 'bat') {
      const bat = decodeBat(await reader.read(region.length, 'VHD block allocation table'), this.#header.maxTableEntries)
      const batEnd = region.offset + region.length
      const allocated: number[] = []
      const usedEntries = blockCount(this.#footer.currentSize)
      for (let index = 0; index < usedEntries; index++) {
        const sector = bat[index] as number
        if (sector === UNUSED_BAT_ENTRY) continue
        const offset = sector * SECTOR_SIZE
        if (offset < batEnd) {
          throw invalidDiskStream(`VHD block ${index} at ${offset} starts before the end of the table`, region.offset + index * 4, {
            block: index,
          })
        }
        allocated.push(index)
        this.#queue.push({ kind: 'block', index, offset, length: STORED_BLOCK })
      }
      this.#queue.sort((a, b) => a.offset - b.offset)
      this.#allocated = allocated
    } else if (region.kind === 'locator') {
      const locator = this.#header.parentLocators[region.index]
      const payload = await reader.read(region.length, 'VHD parent locator')
      const path = locator === undefined ? undefined : decodeLocatorPath(locator, payload)
      if (path !== undefined) this.#parentPaths.push(path)
    } else {
      const bitmap = await reader.read(BITMAP_SIZE, `VHD block ${region.index} bitmap`)
      const data = await reader.read(BLOCK_SIZE, `VHD block ${region.index}`)
      block = decodedBlock(region.index, bitmap, data, this.#footer.diskType === DiskType.differencing)
    }
    this.#end = reader.position
    return block
  }
}

function decodedBlock(index: number, bitmap: Buffer, data: Buffer, differencing: boolean): DecodedVhdBlock {
  if (isFullBitmap(bitmap)) return { index, data }
  if (differencing) return { index, data, bitmap: Buffer.from(bitmap) }
  // In a dynamic disk a clear bit means zeros, whatever bytes the producer left there.
  const cleared = Buffer.from(data)
  for (let sector = 0; sector < SECTORS_PER_BLOCK; sector++) {
    if (!hasSector(bitmap, sector)) cleared.fill(0, sector * SECTOR_SIZE, (sector + 1) * SECTOR_SIZE)
  }
  return { index, data: cleared }
}

/** XO tolerates zero padding between the last region and the footer; anything else is corruption. */
async function readTrailingFooter(reader: ByteReader, footerBytes: Buffer, end: number): Promise<void> {
  let tail = Buffer.alloc(0)
  for (;;) {
    const chunk = await reader.readUpTo(1024 * 1024)
    if (chunk.length === 0) break
    const joined = Buffer.concat([tail, chunk])
    const keep = Math.min(joined.length, FOOTER_SIZE)
    const padding = joined.subarray(0, joined.length - keep)
    const firstNonZero = padding.findIndex((byte) => byte !== 0)
    if (firstNonZero !== -1) {
      throw invalidDiskStream('unexpected bytes after the last VHD block', reader.position - joined.length + firstNonZero)
    }
    tail = Buffer.from(joined.subarray(joined.length - keep))
  }
  if (tail.length < FOOTER_SIZE) throw invalidDiskStream('stream truncated in VHD trailing footer', reader.position, { expected: 'VHD trailing footer' })
  if (!tail.equals(footerBytes)) {
    throw invalidDiskStream('VHD trailing footer differs from the leading one', Math.max(end, reader.position - FOOTER_SIZE), {
      field: 'footer',
    })
  }
}
