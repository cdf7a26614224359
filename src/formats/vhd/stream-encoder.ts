import { AscendingBlocks, BLOCK_SIZE, blockCount, type DiskBlock } from '../blocks.js'
import { diskTooLarge } from '../stream-error.js'
import { batBytes, emptyBat, encodeBat } from './bat.js'
import { FULL_BITMAP } from './bitmap.js'
import { BITMAP_SIZE, DiskType, FOOTER_SIZE, HEADER_SIZE, SECTOR_SIZE, TABLE_OFFSET, VHD_MAX_SIZE } from './constants.js'
import { encodeFooter, newFooter } from './footer.js'
import { emptyLocator, encodeHeader, NULL_UUID, type ParentLocator } from './header.js'
import { w2kuLocator } from './parent-locator.js'

/** The VHD a differencing stream is the child of. */
export interface VhdParentReference {
  /** the parent VHD's footer UUID, the identity readers check */
  readonly uuid: string
  /** the parent's footer timestamp (2000-epoch seconds) */
  readonly timestamp: number
  /** the parent's file name, a hint for tools that look for it next to the child */
  readonly name: string
}

export interface VhdStreamOptions {
  readonly size: number
  /** ascending indexes of the blocks that will be streamed */
  readonly allocated: readonly number[]
  /** the new VHD's footer UUID */
  readonly uuid: string
  /** makes a differencing VHD holding only `allocated` over this parent */
  readonly parent?: VhdParentReference
  /** Unix milliseconds for the footer timestamp */
  readonly now?: number
}

/** Everything about the stream that is known before the first block is read. */
export interface VhdStreamPlan {
  /** exact byte length of the stream, for Content-Length */
  readonly length: number
  readonly allocated: readonly number[]
  readonly prologue: readonly Buffer[]
  readonly footer: Buffer
}

const STORED_BLOCK = BITMAP_SIZE + BLOCK_SIZE

/**
 * Lays out a dynamic (or differencing) VHD the way XO streams one (notes 1.11):
 * footer, header, BAT, locator payloads, allocated blocks in ascending index
 * order, footer again. Positions are computed here so the length is exact.
 */
export function planVhdStream({ size, allocated, uuid, parent, now }: VhdStreamOptions): VhdStreamPlan {
  if (size > VHD_MAX_SIZE) throw diskTooLarge(size, VHD_MAX_SIZE, 'VHD')
  const maxTableEntries = blockCount(size)
  const tableBytes = batBytes(maxTableEntries)
  const locatorOffset = TABLE_OFFSET + tableBytes
  const locator = parent === undefined ? undefined : w2kuLocator(parent.name, locatorOffset)
  const locatorBytes = locator?.payload.length ?? 0
  const firstSector = (locatorOffset + locatorBytes) / SECTOR_SIZE
  const bat = emptyBat(maxTableEntries)
  let previous = -1
  allocated.forEach((index, k) => {
    if (!Number.isInteger(index) || index <= previous || index >= maxTableEntries) {
      throw new RangeError(`allocation list must be ascending block indexes below ${maxTableEntries}, got ${index}`)
    }
    previous = index
    bat[index] = firstSector + k * (STORED_BLOCK / SECTOR_SIZE)
  })
  const footer = encodeFooter(
    newFooter({ size, uuid, diskType: parent === undefined ? DiskType.dynamic : DiskType.differencing, ...(now === undefined ? {} : { now }) }),
  )
  const locators: ParentLocator[] = [locator?.locator ?? emptyLocator, ...Array<ParentLocator>(7).fill(emptyLocator)]
  const header = encodeHeader({
    tableOffset: TABLE_OFFSET,
    maxTableEntries,
    blockSize: BLOCK_SIZE,
    checksum: 0,
    parentUuid: parent?.uuid ?? NULL_UUID,
    parentTimestamp: parent?.timestamp ?? 0,
    parentUnicodeName: parent?.name ?? '',
    parentLocators: locators,
  })
  const prologue = [footer, header, encodeBat(bat), ...(locator === undefined ? [] : [locator.payload])]
  return {
    length: FOOTER_SIZE + HEADER_SIZE + tableBytes + locatorBytes + allocated.length * STORED_BLOCK + FOOTER_SIZE,
    allocated,
    prologue,
    footer,
  }
}

/**
 * The bytes of a planned VHD. `blocks` must yield exactly the planned indexes in
 * ascending order, each BLOCK_SIZE long; a source that breaks that promise fails
 * the stream rather than producing a VHD whose length lies.
 */
export async function* encodeVhdStream(plan: VhdStreamPlan, blocks: AsyncIterable<DiskBlock>): AsyncGenerator<Buffer> {
  yield* plan.prologue
  const source = new AscendingBlocks(blocks)
  try {
    for (const index of plan.allocated) {
      const data = await source.take(index)
      yield FULL_BITMAP
      yield data
    }
  } finally {
    await source.close()
  }
  yield plan.footer
}
