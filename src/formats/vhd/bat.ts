import { SECTOR_SIZE, UNUSED_BAT_ENTRY } from './constants.js'

/** On-disk BAT length: whole sectors, at least one (notes 1.5). */
export function batBytes(maxTableEntries: number): number {
  return Math.max(1, Math.ceil((maxTableEntries * 4) / SECTOR_SIZE)) * SECTOR_SIZE
}

/** Sector numbers by block index, UNUSED_BAT_ENTRY for absent blocks; the padding is 0xFF like every producer's. */
export function encodeBat(entries: Uint32Array): Buffer {
  const buffer = Buffer.alloc(batBytes(entries.length), 0xff)
  entries.forEach((sector, i) => buffer.writeUInt32BE(sector, i * 4))
  return buffer
}

export function decodeBat(buffer: Buffer, maxTableEntries: number): Uint32Array {
  const entries = new Uint32Array(maxTableEntries)
  for (let i = 0; i < maxTableEntries; i++) entries[i] = buffer.readUInt32BE(i * 4)
  return entries
}

export function emptyBat(maxTableEntries: number): Uint32Array {
  return new Uint32Array(maxTableEntries).fill(UNUSED_BAT_ENTRY)
}
