import t from 'tap'
import { blockPool } from '../../src/formats/block-pool.js'
import { BLOCK_SIZE, blockBytes } from '../../src/formats/blocks.js'
import { ByteReader } from '../../src/formats/byte-reader.js'
import { giveBack } from '../../src/formats/lending.js'
import { giveBackBlock, PiecedBlock } from '../../src/formats/pieced-block.js'
import { encodeRawStream } from '../../src/formats/raw/raw-encoder.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { openVhdStream } from '../../src/formats/vhd/stream-decoder.js'
import { collect, drain, patternBlock, rawOf, sliced, streamError, testDisk } from '../helpers/disks.js'

const MiB = 1024 * 1024
/** node:http's body pieces are 64 KiB; 3 more puts every block boundary inside a piece. */
const PIECE = 64 * 1024 + 3

/** Empties the process's pool, so that what comes back to it can be counted. */
function emptyPool(): void {
  while (blockPool.idle > 0) blockPool.take()
}

t.test('a block read as pieces is the input’s own memory, gathered only when its data is read', async (t) => {
  const block = patternBlock(7)
  const input = Buffer.concat([Buffer.alloc(512, 1), block, Buffer.alloc(100, 2)])
  const reader = new ByteReader(sliced(input, PIECE))
  t.ok((await reader.read(512, 'head')).equals(Buffer.alloc(512, 1)))
  const pieces = await reader.readPieces(BLOCK_SIZE, 'block')
  t.equal(reader.position, 512 + BLOCK_SIZE)
  t.ok(pieces.length > 1 && pieces.every((piece) => piece.buffer === input.buffer), 'views into the input, nothing copied')
  t.ok(Buffer.concat(pieces).equals(block))
  t.ok((await reader.read(100, 'tail')).equals(Buffer.alloc(100, 2)), 'the rest of a shared piece follows')

  emptyPool()
  const pieced = new PiecedBlock(3, pieces)
  t.equal(blockBytes(pieced), BLOCK_SIZE, 'counted without gathering')
  giveBackBlock(pieced)
  t.equal(blockPool.idle, 0, 'never gathered: nothing to give back')
  const data = pieced.data
  t.ok(data.equals(block))
  t.equal(pieced.data, data, 'gathered once')
  giveBackBlock(pieced)
  t.equal(blockPool.idle, 1, 'the gathered block goes back to the pool')
})

t.test('pieces of a truncated stream fail with the offset, as reads do', async (t) => {
  const reader = new ByteReader(sliced(Buffer.alloc(1000), 300))
  await reader.read(200, 'head')
  const error = await streamError(reader.readPieces(1000, 'VHD block 0'))
  t.equal(error.code, 'INVALID_DISK_STREAM')
  t.match(error.message, /truncated in VHD block 0/)
  t.equal(reader.position, 200, 'nothing consumed')
})

t.test('a raw export sends a whole block as its pieces, and cuts a ranged one from its data', async (t) => {
  const disk = testDisk(5 * MiB, [0, 2])
  const piecesOf = new Map(
    disk.allocated.map((index) => {
      const data = disk.data.get(index) as Buffer
      return [index, [data.subarray(0, PIECE), data.subarray(PIECE, 2 * PIECE), data.subarray(2 * PIECE)]]
    }),
  )
  const source = (): { size: number; allocated: number[]; blocks: AsyncIterable<PiecedBlock> } => ({
    size: disk.size,
    allocated: disk.allocated,
    blocks: (async function* () {
      for (const index of disk.allocated) yield new PiecedBlock(index, piecesOf.get(index) ?? [])
    })(),
  })
  const chunks = await drain(encodeRawStream(source()))
  t.ok(Buffer.concat(chunks).equals(rawOf(disk)))
  t.equal(chunks.length, 3 + 1 + 1, 'block 0 as its three pieces, block 1 as one zero block, block 2 cut at the size from its data')
  t.ok(
    chunks.slice(0, 3).every((chunk, i) => chunk === piecesOf.get(0)?.[i]),
    'the pieces themselves',
  )

  const range = { start: MiB, end: 4 * MiB + 5 }
  t.ok((await collect(encodeRawStream(source(), range))).equals(rawOf(disk).subarray(range.start, range.end)))
})

t.test('the VHD decoder hands a full block over as its pieces, a partial one gathered', async (t) => {
  const disk = testDisk(6 * MiB, [0, 2])
  const plan = planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', now: 0 })
  const bytes = await collect(encodeVhdStream(plan, disk.blocks()))
  const blocks = await drain((await openVhdStream(sliced(bytes, PIECE))).blocks)
  t.same(blocks.map((block) => block.index), [0, 2])
  for (const block of blocks) {
    t.ok(block.pieces !== undefined && block.pieces.every((piece) => piece.buffer === bytes.buffer), `block ${block.index}: pieces of the input`)
    t.ok(Buffer.concat(block.pieces ?? []).equals(disk.data.get(block.index) as Buffer))
  }

  // Block 2's second sector marked absent (its BAT entry at 1536 + 2 × 4, its bitmap first): a dynamic disk reads it as zeros.
  const partial = Buffer.from(bytes)
  partial[partial.readUInt32BE(1536 + 8) * 512] = 0b10111111
  const [, second] = await drain((await openVhdStream(sliced(partial, PIECE))).blocks)
  t.equal(second?.pieces, undefined, 'gathered to be completed')
  const expected = Buffer.from(disk.data.get(2) as Buffer).fill(0, 512, 1024)
  t.ok(second?.data.equals(expected))
  if (second !== undefined) giveBack(second.data)
})
