import { BLOCK_SIZE, blockCount, isZero } from '../blocks.js'
import { invalidDiskStream } from '../stream-error.js'
import { batBytes, decodeBat } from './bat.js'
import { FULL_BITMAP, isFullBitmap } from './bitmap.js'
import { BITMAP_SIZE, DiskType, FOOTER_SIZE, HEADER_OFFSET, HEADER_SIZE, SECTOR_SIZE, UNUSED_BAT_ENTRY } from './constants.js'
import { assertDynamicFooter, decodeFooter, encodeFooter, type VhdFooter } from './footer.js'
import { decodeHeader, type VhdHeader } from './header.js'
import type { RandomAccess } from './random-access.js'
import { planVhdStream, type VhdParentReference } from './stream-encoder.js'

export interface StoredBlock {
  /** sector bitmap (512 B); for a dynamic disk every producer we know writes it full */
  readonly bitmap: Buffer
  readonly data: Buffer
}

export interface NewVhdFile {
  readonly size: number
  readonly uuid: string
  readonly parent?: VhdParentReference
  /** Unix milliseconds */
  readonly now?: number
}

const STORED_BLOCK = BITMAP_SIZE + BLOCK_SIZE
/** the file system's allocation unit, the granularity of holes */
const PAGE = 4096

/** Length of `data` up to the end of its last page holding a non-zero byte. */
function usedLength(data: Buffer): number {
  let end = data.length
  while (end > 0) {
    const start = Math.max(0, end - PAGE)
    if (!isZero(data.subarray(start, end))) break
    end = start
  }
  return end
}

/**
 * A dynamic or differencing VHD file read and written in place through
 * positional I/O: the lab's VDI files. New blocks are appended where the
 * trailing footer was; the footer moves after them and only then does the BAT
 * point at the block, so a crash mid-write leaves the previous content readable.
 */
export class VhdFile {
  #footer: VhdFooter
  readonly header: VhdHeader
  readonly #bat: Uint32Array
  readonly #io: RandomAccess
  #fileSize: number

  private constructor(io: RandomAccess, footer: VhdFooter, header: VhdHeader, bat: Uint32Array, fileSize: number) {
    this.#io = io
    this.#footer = footer
    this.header = header
    this.#bat = bat
    this.#fileSize = fileSize
  }

  /** Writes an empty VHD (no block allocated), with the same layout the stream encoder uses. */
  static async create(io: RandomAccess, options: NewVhdFile): Promise<VhdFile> {
    const plan = planVhdStream({ ...options, allocated: [] })
    let position = 0
    for (const part of [...plan.prologue, plan.footer]) {
      await io.write(position, part)
      position += part.length
    }
    return VhdFile.open(io)
  }

  /** Opens and checks a VHD file: both footers equal, checksums, header, BAT. Offsets in errors are file offsets. */
  static async open(io: RandomAccess): Promise<VhdFile> {
    const fileSize = await io.size()
    if (fileSize < FOOTER_SIZE * 2 + HEADER_SIZE) throw invalidDiskStream('VHD file too short', fileSize)
    const leading = await io.read(0, FOOTER_SIZE)
    const trailing = await io.read(fileSize - FOOTER_SIZE, FOOTER_SIZE)
    const footer = decodeFooter(trailing, fileSize - FOOTER_SIZE)
    assertDynamicFooter(footer, fileSize - FOOTER_SIZE)
    if (!leading.equals(trailing)) throw invalidDiskStream('VHD leading footer differs from the trailing one', 0, { field: 'footer' })
    const header = decodeHeader(await io.read(HEADER_OFFSET, HEADER_SIZE), HEADER_OFFSET, footer.currentSize)
    const tableBytes = batBytes(header.maxTableEntries)
    const table = await io.read(header.tableOffset, tableBytes)
    if (table.length < tableBytes) throw invalidDiskStream('VHD block allocation table truncated', header.tableOffset + table.length)
    return new VhdFile(io, footer, header, decodeBat(table, header.maxTableEntries), fileSize)
  }

  get footer(): VhdFooter {
    return this.#footer
  }

  get size(): number {
    return this.#footer.currentSize
  }

  get uuid(): string {
    return this.#footer.uuid
  }

  get isDifferencing(): boolean {
    return this.#footer.diskType === DiskType.differencing
  }

  /** bytes the file occupies */
  get fileSize(): number {
    return this.#fileSize
  }

  /** Ascending indexes of the allocated blocks, from the BAT alone. */
  allocatedBlocks(): number[] {
    const out: number[] = []
    const count = Math.min(blockCount(this.size), this.#bat.length)
    for (let index = 0; index < count; index++) if (this.#bat[index] !== UNUSED_BAT_ENTRY) out.push(index)
    return out
  }

  hasBlock(index: number): boolean {
    return index < this.#bat.length && this.#bat[index] !== UNUSED_BAT_ENTRY
  }

  /** The stored bitmap and data of a block, undefined when the BAT has no entry. */
  /** A stored block, its data read into `into` when given. */
  async readBlock(index: number, into?: Buffer): Promise<StoredBlock | undefined> {
    if (!this.hasBlock(index)) return undefined
    const offset = (this.#bat[index] as number) * SECTOR_SIZE
    // Two reads, so the data is a buffer of its own: it goes out as it is (to a socket, or moved to a worker) without a copy.
    const [bitmap, data] = await Promise.all([this.#io.read(offset, BITMAP_SIZE), this.#io.read(offset + BITMAP_SIZE, BLOCK_SIZE, into)])
    if (bitmap.length < BITMAP_SIZE || data.length < BLOCK_SIZE) {
      throw invalidDiskStream(`VHD block ${index} truncated`, offset + bitmap.length + data.length, { block: index })
    }
    return { bitmap, data }
  }

  /** Writes a whole block in place, or appends it when absent; `bitmap` defaults to full. */
  async writeBlock(index: number, data: Buffer, bitmap: Buffer = FULL_BITMAP): Promise<void> {
    if (index < 0 || index >= blockCount(this.size)) throw new RangeError(`block ${index} is outside a disk of ${this.size} bytes`)
    if (data.length !== BLOCK_SIZE || bitmap.length !== BITMAP_SIZE) throw new RangeError(`block ${index} must be ${BLOCK_SIZE} bytes with a ${BITMAP_SIZE}-byte bitmap`)
    if (this.hasBlock(index)) {
      const offset = (this.#bat[index] as number) * SECTOR_SIZE
      await this.#io.write(offset, [isFullBitmap(bitmap) ? FULL_BITMAP : bitmap, data])
      return
    }
    const offset = this.#fileSize - FOOTER_SIZE
    const used = usedLength(data)
    if (used === data.length) {
      await this.#io.write(offset, [bitmap, data, encodeFooter(this.#footer)])
    } else {
      // Trailing zeros are skipped: the file gets a hole there, which reads as zeros and takes no space.
      await this.#io.write(offset, used === 0 ? bitmap : [bitmap, data.subarray(0, used)])
      await this.#io.write(offset + STORED_BLOCK, encodeFooter(this.#footer))
    }
    this.#fileSize = offset + STORED_BLOCK + FOOTER_SIZE
    this.#bat[index] = offset / SECTOR_SIZE
    await this.#writeBatEntry(index)
  }

  async #writeBatEntry(index: number): Promise<void> {
    const entry = Buffer.alloc(4)
    entry.writeUInt32BE(this.#bat[index] as number)
    await this.#io.write(this.header.tableOffset + index * 4, entry)
  }

  /** Replaces footer fields (both copies), e.g. when a coalesce hands the child's identity to its parent. */
  async updateFooter(fields: Partial<Pick<VhdFooter, 'currentSize' | 'originalSize' | 'geometry' | 'timestamp' | 'uuid'>>): Promise<void> {
    if (fields.currentSize !== undefined && blockCount(fields.currentSize) > this.#bat.length) {
      throw new RangeError(`the block table of ${this.#bat.length} entries cannot hold ${fields.currentSize} bytes`)
    }
    this.#footer = { ...this.#footer, ...fields }
    const bytes = encodeFooter(this.#footer)
    await this.#io.write(this.#fileSize - FOOTER_SIZE, bytes)
    await this.#io.write(0, bytes)
  }

  /** how many BAT entries fit in the sectors the table already occupies */
  get tableCapacity(): number {
    return batBytes(this.header.maxTableEntries) / 4
  }
}
