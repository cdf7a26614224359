import t from 'tap'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { blocksInRange, encodeRawStream } from '../../src/formats/raw/raw-encoder.js'
import { decodeRawStream } from '../../src/formats/raw/raw-decoder.js'
import { collect, drain, rawOf, sliced, streamError, testDisk } from '../helpers/disks.js'

const MiB = 1024 * 1024

t.test('raw export is the exact size, holes as zeros, last block cut', async (t) => {
  const disk = testDisk(5 * MiB + 3, [0, 2])
  const bytes = await collect(encodeRawStream({ size: disk.size, allocated: disk.allocated, blocks: disk.blocks() }))
  t.equal(bytes.length, disk.size)
  t.ok(bytes.equals(rawOf(disk)))
})

t.test('byte ranges read only the blocks they touch', async (t) => {
  const disk = testDisk(9 * MiB + 512, [0, 1, 3, 4])
  const raw = rawOf(disk)
  const ranges = [
    [0, 0],
    [0, 1],
    [BLOCK_SIZE - 1, BLOCK_SIZE + 1],
    [3 * MiB, 9 * MiB + 512],
    [5 * MiB + 7, 5 * MiB + 9],
    [9 * MiB + 511, 9 * MiB + 512],
    [0, 9 * MiB + 512],
  ] as const
  for (const [start, end] of ranges) {
    const allocated = blocksInRange(disk.allocated, { start, end })
    const bytes = await collect(encodeRawStream({ size: disk.size, allocated, blocks: disk.blocks(allocated) }, { start, end }))
    t.ok(bytes.equals(raw.subarray(start, end)), `range ${start}-${end}`)
  }
  t.same(blocksInRange(disk.allocated, { start: 3 * MiB, end: 6 * MiB }), [1])
  await t.rejects(drain(encodeRawStream({ size: 10, allocated: [], blocks: disk.blocks([]) }, { start: 5, end: 11 })), RangeError)
})

t.test('a source breaking its promise fails the stream', async (t) => {
  const disk = testDisk(6 * MiB, [0, 2])
  await t.rejects(drain(encodeRawStream({ size: disk.size, allocated: [0, 2], blocks: disk.blocks([0]) })), /ended before block 2/)
  await t.rejects(drain(encodeRawStream({ size: disk.size, allocated: [0, 2], blocks: disk.blocks([2, 0]) })), /gave block 2/)
})

t.test('raw import skips zero blocks at any chunk boundary', async (t) => {
  const disk = testDisk(7 * MiB + 1024, [1, 3])
  const raw = rawOf(disk)
  for (const slice of [511, 7 * 1024, 65537, raw.length]) {
    for (const size of [disk.size, undefined]) {
      const generator = decodeRawStream(sliced(raw, slice), size)
      const blocks = []
      let next = await generator.next()
      while (next.done !== true) {
        blocks.push(next.value)
        next = await generator.next()
      }
      t.equal(next.value, disk.size, 'returns the bytes read')
      t.same(
        blocks.map((b) => b.index),
        [1, 3],
        `slices of ${slice}`,
      )
      const expected = (index: number): Buffer => {
        const part = raw.subarray(index * BLOCK_SIZE, (index + 1) * BLOCK_SIZE)
        return Buffer.concat([part, Buffer.alloc(BLOCK_SIZE - part.length)])
      }
      t.ok(blocks.every((b) => b.data.equals(expected(b.index))))
    }
  }
})

t.test('a partial last block is zero padded', async (t) => {
  const raw = Buffer.alloc(BLOCK_SIZE + 10, 1)
  const blocks = await drain(decodeRawStream(sliced(raw, 4096), raw.length))
  t.equal(blocks.length, 2)
  t.equal(blocks[1]?.data.length, BLOCK_SIZE)
  t.equal(blocks[1]?.data[10], 0)
  t.equal(blocks[1]?.data[9], 1)
})

t.test('too short or too long raw uploads fail with the offset', async (t) => {
  const raw = Buffer.alloc(3 * MiB, 7)
  const short = await streamError(drain(decodeRawStream(sliced(raw.subarray(0, MiB + 5), 511), 3 * MiB)))
  t.equal(short.code, 'INVALID_DISK_STREAM')
  t.equal(short.data?.['offset'], MiB + 5)
  const long = await streamError(drain(decodeRawStream(sliced(Buffer.concat([raw, Buffer.alloc(1)]), 7 * 1024), 3 * MiB)))
  t.equal(long.data?.['offset'], 3 * MiB)
  t.match(long.message, /longer/)
})
