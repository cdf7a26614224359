import { BLOCK_SIZE } from '../blocks.js'
import { BITMAP_SIZE, SECTOR_SIZE } from './constants.js'

export const SECTORS_PER_BLOCK = BLOCK_SIZE / SECTOR_SIZE

/** What our producer writes for every block: all sectors present (notes 1.6). */
export const FULL_BITMAP: Buffer = Buffer.alloc(BITMAP_SIZE, 0xff)

/** MSB first: sector s is bit 0x80 >> (s & 7) of byte s >> 3. */
export function hasSector(bitmap: Uint8Array, sector: number): boolean {
  return (((bitmap[sector >> 3] as number) >> (7 - (sector & 7))) & 1) === 1
}

export function setSector(bitmap: Uint8Array, sector: number): void {
  bitmap[sector >> 3] = (bitmap[sector >> 3] as number) | (0x80 >> (sector & 7))
}

export function isFullBitmap(bitmap: Buffer): boolean {
  return bitmap.equals(FULL_BITMAP)
}
