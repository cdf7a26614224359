import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { gunzipSync, gzipSync } from 'node:zlib'
import { WorkerPool, XVA_OUTPUT_SLOTS } from '../../workers/pool.js'
import { BLOCK_SIZE, type DiskBlock, type DiskContent, type DiskSource } from '../../src/formats/blocks.js'
import { decompressor } from '../../src/formats/compression.js'
import { giveBack } from '../../src/formats/lending.js'
import type { XvaDescription } from '../../src/formats/xva/description.js'
import { encodeXva } from '../../src/formats/xva/xva-writer.js'
import { collect } from '../helpers/disks.js'

const MiB = 1024 * 1024
const pool = new WorkerPool({ size: 1 })
t.teardown(() => pool.close())
const now = new Date('2026-11-24T12:00:00Z')

const description = (sizes: number[]): XvaDescription => ({
  vm: { uuid: 'vm-1', name_label: 'vm', name_description: '', memory_static_max: MiB, memory_dynamic_max: MiB, memory_dynamic_min: MiB, memory_static_min: MiB, VCPUs_max: 1, VCPUs_at_startup: 1, is_a_template: false, tags: [], other_config: {} },
  disks: sizes.map((size, i) => ({ uuid: `disk-${i}`, name_label: `disk ${i}`, name_description: '', virtual_size: size, device: `xvd${'ab'[i]}`, userdevice: String(i), bootable: i === 0, mode: 'RW' as const })),
  vifs: [],
})

/** A disk of `blocks` blocks (the last one short by 3 sectors), every allocated block random but one all zero. */
function disk(blocks: number, allocated: number[]): { size: number; allocated: number[]; data: Map<number, Buffer> } {
  const data = new Map(allocated.map((index, i) => [index, i === 1 ? Buffer.alloc(BLOCK_SIZE) : randomBytes(BLOCK_SIZE)]))
  return { size: blocks * BLOCK_SIZE - 1536, allocated, data }
}

type Disk = ReturnType<typeof disk>
const disks = [disk(12, [0, 1, 2, 5, 6, 7, 8, 11]), disk(3, [1])]
const desc = description(disks.map((d) => d.size))

interface Failure {
  readonly after: number
  readonly error: Error
}

/** Each block in the buffer `buffer` gives, or in a fresh one (the encoding gives it back: its source may not be reused). */
async function* blocksOf(d: Disk, buffer?: () => Promise<Buffer>, fail?: Failure): AsyncGenerator<DiskBlock> {
  let given = 0
  for (const index of d.allocated) {
    if (fail !== undefined && given++ === fail.after) throw fail.error
    const stored = d.data.get(index) as Buffer
    const data = buffer === undefined ? Buffer.from(stored) : await buffer()
    stored.copy(data)
    yield { index, data }
  }
}
const contents = (): DiskContent[] => disks.map((d) => ({ size: d.size, allocated: d.allocated, blocks: blocksOf(d) }))
/** The first disk read into the worker's slots, the second not (a reader that ignores them). */
const sources = (fail?: Failure): DiskSource[] =>
  disks.map((d, i) => ({ size: d.size, allocated: d.allocated, read: (buffer) => (i === 0 ? blocksOf(d, buffer, fail) : blocksOf(d)) }))

/** Reads an encoding as a socket would: each chunk copied, then given back. */
async function consume(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of chunks) {
    parts.push(Buffer.from(chunk))
    giveBack(chunk)
  }
  return Buffer.concat(parts)
}

const plain = await collect(encodeXva(desc, contents(), { now }))

t.test('the worker writes the same archive as the encoder on this thread, plain, zstd and gzip', async (t) => {
  t.ok(plain.length > 12 * MiB, 'more archive than the output slots hold')
  t.ok((await consume(pool.encodeXva(desc, sources(), 'none', { now }))).equals(plain), 'plain: byte for byte')
  const zstd = await consume(pool.encodeXva(desc, sources(), 'zstd', { now }))
  t.ok((await collect(decompressor('zstd').end(zstd))).equals(plain), 'zstd: restores the same archive')
  t.ok(gunzipSync(await consume(pool.encodeXva(desc, sources(), 'gzip', { now }))).equals(plain), 'gzip: restores the same archive')
})

t.test('asked for it, the worker sends the MD5 of the archive it produced, before its end', async (t) => {
  for (const compression of ['none', 'zstd'] as const) {
    let md5: string | undefined
    const archive = await consume(pool.encodeXva(desc, sources(), compression, { now, md5: (hex) => (md5 = hex) }))
    t.equal(md5, createHash('md5').update(archive).digest('hex'), compression)
  }
})

t.test('output slots wait for their chunks to be given back', async (t) => {
  const chunks = pool.encodeXva(desc, sources(), 'none', { now })[Symbol.asyncIterator]()
  const held: Buffer[] = []
  for (let i = 0; i < XVA_OUTPUT_SLOTS; i++) {
    const next = await chunks.next()
    t.notOk(next.done)
    held.push(next.value as Buffer)
  }
  let arrived = false
  const following = chunks.next().then((next) => {
    arrived = true
    return next
  })
  // The pool has one worker: once it has answered a job given after the export, it has run the
  // export as far as the output slots let it.
  t.equal((await collect(Readable.from([gzipSync('probe')]).pipe(pool.transform('gzip-decompress')))).toString(), 'probe')
  t.notOk(arrived, 'no further chunk while every output slot is held')
  const copies = held.map((chunk) => Buffer.from(chunk))
  for (const chunk of held) giveBack(chunk)
  const next = await following
  t.notOk(next.done, 'the next one comes once they are given back')
  copies.push(Buffer.from(next.value as Buffer))
  giveBack(next.value as Buffer)
  const rest = await consume({ [Symbol.asyncIterator]: () => chunks })
  t.ok(Buffer.concat([...copies, rest]).equals(plain), 'and the archive is whole')
})

t.test('a reader that stops early, then a failing disk, leave the next export whole', async (t) => {
  const early = pool.encodeXva(desc, sources(), 'zstd', { now })
  for await (const chunk of early) {
    giveBack(chunk)
    break
  }
  await t.rejects(consume(pool.encodeXva(desc, sources({ after: 3, error: new Error('disk went away') }), 'zstd', { now })), /disk went away/)
  const wrongSize = [{ ...sources()[0]!, size: 5 }, sources()[1]!]
  await t.rejects(consume(pool.encodeXva(desc, wrongSize, 'none', { now })), /described as/)
  t.ok((await consume(pool.encodeXva(desc, sources(), 'none', { now }))).equals(plain), 'byte for byte')
})

t.test('two exports at once share nothing', async (t) => {
  const [a, b] = await Promise.all([consume(pool.encodeXva(desc, sources(), 'none', { now })), consume(pool.encodeXva(desc, sources(), 'none', { now }))])
  t.ok(a.equals(plain))
  t.ok(b.equals(plain))
})
