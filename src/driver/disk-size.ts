import type { XoRecord } from './types.js'

/**
 * A VDI's or VDI snapshot's virtual size in bytes, what every transfer of
 * its content is sized by. A disk record without a usable one breaks the
 * driver contract, so it fails loudly rather than reading as an empty disk.
 */
export function diskSize(vdi: XoRecord): number {
  const size = vdi.size
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw new Error(`${vdi.type} ${vdi.id} has no usable size`)
  return size
}
