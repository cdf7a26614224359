import { blockCount } from '../../formats/blocks.js'
import { ByteReader } from '../../formats/byte-reader.js'
import { invalidDiskStream } from '../../formats/stream-error.js'
import { batBytes, decodeBat } from '../../formats/vhd/bat.js'
import { FOOTER_SIZE, HEADER_OFFSET, HEADER_SIZE, UNUSED_BAT_ENTRY } from '../../formats/vhd/constants.js'
import { assertDynamicFooter, decodeFooter } from '../../formats/vhd/footer.js'
import { decodeHeader } from '../../formats/vhd/header.js'

/**
 * The blocks a VHD stream holds, read off its block allocation table: the
 * stream is read only up to the end of the table, the blocks themselves
 * never, and the input is closed after.
 */
export async function vhdAllocation(input: AsyncIterable<Uint8Array>): Promise<number[]> {
  const reader = new ByteReader(input)
  try {
    const footer = decodeFooter(await reader.read(FOOTER_SIZE, 'VHD footer'), 0)
    assertDynamicFooter(footer, 0)
    const header = decodeHeader(await reader.read(HEADER_SIZE, 'VHD header'), HEADER_OFFSET, footer.currentSize)
    if (header.tableOffset < reader.position) throw invalidDiskStream('the VHD block allocation table overlaps its header', reader.position)
    await reader.skip(header.tableOffset - reader.position, 'gap before the VHD block allocation table')
    const bat = decodeBat(await reader.read(batBytes(header.maxTableEntries), 'VHD block allocation table'), header.maxTableEntries)
    const allocated: number[] = []
    const used = Math.min(header.maxTableEntries, blockCount(footer.currentSize))
    for (let index = 0; index < used; index++) if (bat[index] !== UNUSED_BAT_ENTRY) allocated.push(index)
    return allocated
  } finally {
    await reader.close()
  }
}
