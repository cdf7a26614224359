/**
 * The one's complement of the byte sum, the checksum bytes counted as zero
 * (notes 1.4). Shared by the footer (field at 64) and the header (field at 36).
 */
export function vhdChecksum(bytes: Uint8Array, checksumOffset: number): number {
  let sum = 0
  for (let i = 0; i < bytes.length; i++) {
    if (i >= checksumOffset && i < checksumOffset + 4) continue
    sum += bytes[i] as number
  }
  return ~sum >>> 0
}
