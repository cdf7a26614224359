import t from 'tap'
import { Readable } from 'node:stream'
import { setImmediate as turn } from 'node:timers/promises'
import { bodyChunks } from '../../src/driver/xapi/body-chunks.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { COLLECT_EVERY } from '../../src/http/young-collection.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { openVhdStream } from '../../src/formats/vhd/stream-decoder.js'
import { collect, drain, streamError, testDisk } from '../helpers/disks.js'

const KiB = 1024

/** A body of `count` socket-sized chunks made on demand, counting how many were made. */
function body(count: number, size = 64 * KiB): { readonly source: Readable; made(): number } {
  let made = 0
  const source = new Readable({
    read() {
      if (made === count) this.push(null)
      else this.push(Buffer.alloc(size, made++ % 251))
    },
  })
  return { source, made: () => made }
}

t.test('the chunks in order, whole, then the end', async (t) => {
  const { source } = body(100, 1000)
  const chunks = await drain(bodyChunks(source))
  t.equal(chunks.length, 100)
  t.ok(chunks.every((chunk, i) => chunk.length === 1000 && chunk[0] === i % 251 && chunk[999] === i % 251))
})

t.test('the chunks read are collected as they go: one young-generation collection per COLLECT_EVERY bytes', async (t) => {
  const calls: unknown[] = []
  const saved = globalThis.gc
  globalThis.gc = ((options: unknown) => void calls.push(options)) as NodeJS.GCFunction
  t.teardown(() => (globalThis.gc = saved))
  const { source } = body((3 * COLLECT_EVERY) / (64 * KiB) + 5)
  t.equal((await drain(bodyChunks(source))).length, (3 * COLLECT_EVERY) / (64 * KiB) + 5)
  t.same(calls, [{ type: 'minor' }, { type: 'minor' }, { type: 'minor' }])
})

t.test('a reader that stops reading pauses the body: at most 32 chunks and the stream’s own buffer wait', async (t) => {
  const { source, made } = body(1000)
  const chunks = bodyChunks(source)[Symbol.asyncIterator]()
  t.equal((await chunks.next()).value?.[0], 0)
  // Paused, with its own buffer full: the stream asks for nothing more.
  while (!(source.isPaused() && source.readableLength >= source.readableHighWaterMark)) await turn()
  const held = made()
  t.ok(held <= 1 + 33 + 1, `${held} chunks made while 1 was read`)
  let count = 1
  for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) {
    t.equal(next.value[0], count % 251, `chunk ${count}`)
    count++
  }
  t.equal(count, 1000, 'resumed to the end, nothing lost')
})

t.test('an error in the body fails the reader after the chunks before it', async (t) => {
  const broken = new Readable({ read() {} })
  broken.push(Buffer.from('one'))
  const got: string[] = []
  const reading = (async () => {
    for await (const chunk of bodyChunks(broken)) {
      got.push(chunk.toString())
      broken.destroy(new Error('connection reset'))
    }
  })()
  await t.rejects(reading, { message: 'connection reset' })
  t.same(got, ['one'])
})

t.test('a body closed short without an error is a cut VHD stream, never a whole one', async (t) => {
  const disk = testDisk(3 * BLOCK_SIZE, [0, 2])
  const plan = planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', now: 0 })
  const bytes = await collect(encodeVhdStream(plan, disk.blocks()))
  const cut = new Readable({ read() {} })
  for (let offset = 0; offset < BLOCK_SIZE; offset += 64 * KiB) cut.push(bytes.subarray(offset, offset + 64 * KiB))
  const reader = await openVhdStream(bodyChunks(cut))
  t.same(await reader.allocation(), [0, 2])
  cut.destroy()
  const error = await streamError(drain(reader.blocks))
  t.equal(error.code, 'INVALID_DISK_STREAM')
  t.match(error.message, /truncated in VHD block 0/)
})
