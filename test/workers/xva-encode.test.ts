import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { gunzipSync, gzipSync } from 'node:zlib'
import { WorkerPool, XVA_OUTPUT_SLOTS } from '../../workers/pool.js'
import { BLOCK_SIZE, type DiskBlock, type DiskContent, type DiskSource } from '../../src/formats/blocks.js'
import { decompressor } from '../../src/formats/compression.js'
import { giveBack } from '../../src/formats/lending.js'
import type { XvaDescription } from '../../src/formats/xva/description.js'
import { encodeXva } from '../../src/formats/xva/xva-writer.js'
import { collect, tempDir } from '../helpers/disks.js'

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

/** A new file's descriptor, closed (and the file removed) after the test. */
async function newFile(t: Test): Promise<{ path: string; fd: number }> {
  const folder = tempDir()
  const path = join(folder.path, 'archive.xva')
  const handle = await open(path, 'wx')
  t.teardown(async () => {
    await handle.close()
    folder.cleanup()
  })
  return { path, fd: handle.fd }
}

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

/**
 * Whether `next` settles within a few round trips to the pool's one worker: each lets the export go
 * one step further between the threads (a slot freed, the next block fed, its chunks sent back).
 */
async function settlesWithinProbes(t: Test, next: Promise<unknown>): Promise<boolean> {
  let settled = false
  void next.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let probe = 0; probe < 3 && !settled; probe++) {
    t.equal((await collect(Readable.from([gzipSync('probe')]).pipe(pool.transform('gzip-decompress')))).toString(), 'probe', 'the worker answers a probe')
  }
  return settled
}

t.test('chunks held stop the export within its shared memory, and are not overwritten while held', async (t) => {
  // More archive than an export's slots hold.
  const large = disk(24, Array.from({ length: 24 }, (_, index) => index))
  const largeDescription = description([large.size])
  const plain = await collect(encodeXva(largeDescription, [{ size: large.size, allocated: large.allocated, blocks: blocksOf(large) }], { now }))
  const largeSources: DiskSource[] = [{ size: large.size, allocated: large.allocated, read: (buffer) => blocksOf(large, buffer) }]
  const chunks = pool.encodeXva(largeDescription, largeSources, 'none', { now })[Symbol.asyncIterator]()
  const held: Buffer[] = []
  let next = chunks.next()
  // Hold every chunk while they come: the export then waits for memory that only given-back chunks free.
  while (await settlesWithinProbes(t, next)) {
    const result = await next
    if (result.done === true) break
    held.push(result.value)
    next = chunks.next()
  }
  const heldBytes = held.reduce((sum, chunk) => sum + chunk.length, 0)
  t.ok(heldBytes < plain.length, `stopped before the end (${heldBytes} of ${plain.length} bytes held)`)
  t.ok(heldBytes <= XVA_OUTPUT_SLOTS * MiB, 'no more held than its output slots')
  t.ok(Buffer.concat(held).equals(plain.subarray(0, heldBytes)), 'the chunks held are the start of the archive, unchanged')
  for (const chunk of held) giveBack(chunk)
  const following = await next
  t.notOk(following.done, 'the next one comes once they are given back')
  const first = Buffer.from(following.value as Buffer)
  giveBack(following.value as Buffer)
  const rest = await consume({ [Symbol.asyncIterator]: () => chunks })
  t.ok(Buffer.concat([plain.subarray(0, heldBytes), first, rest]).equals(plain), 'and the archive is whole')
})

t.test('a consumer holding a few chunks at a time reads each as it was when yielded', async (t) => {
  for (const compression of ['none', 'zstd'] as const) {
    const window: Array<{ chunk: Buffer; copy: Buffer }> = []
    let changed = 0
    for await (const chunk of pool.encodeXva(desc, sources(), compression, { now })) {
      window.push({ chunk, copy: Buffer.from(chunk) })
      if (window.length <= 3) continue
      const oldest = window.shift() as { chunk: Buffer; copy: Buffer }
      if (!oldest.chunk.equals(oldest.copy)) changed++
      giveBack(oldest.chunk)
    }
    for (const { chunk } of window) giveBack(chunk)
    t.equal(changed, 0, `${compression}: no chunk changed while held`)
  }
})

t.test("for a reader, a plain archive's chunks are copies: the blocks' slots go back to the disk's reader at once", async (t) => {
  let input: ArrayBufferLike | undefined
  const watched = sources().map((source) => ({
    ...source,
    read: (buffer: () => Promise<Buffer>) =>
      source.read(async () => {
        const slot = await buffer()
        input = slot.buffer
        return slot
      }),
  }))
  let views = 0
  const parts: Buffer[] = []
  for await (const chunk of pool.encodeXva(desc, watched, 'none', { now })) {
    if (chunk.buffer === input) views++
    parts.push(Buffer.from(chunk))
    giveBack(chunk)
  }
  t.ok(Buffer.concat(parts).equals(plain), 'byte for byte')
  t.equal(views, 0, 'no chunk is a range of an input slot')
})

t.test('a reader that stops early, then a failing disk, leave the next export whole', async (t) => {
  for (const compression of ['zstd', 'none'] as const) {
    for await (const chunk of pool.encodeXva(desc, sources(), compression, { now })) {
      giveBack(chunk)
      break
    }
  }
  await t.rejects(consume(pool.encodeXva(desc, sources({ after: 3, error: new Error('disk went away') }), 'zstd', { now })), /disk went away/)
  await t.rejects(consume(pool.encodeXva(desc, sources({ after: 3, error: new Error('disk went away') }), 'none', { now })), /disk went away/)
  const wrongSize = [{ ...sources()[0]!, size: 5 }, sources()[1]!]
  await t.rejects(consume(pool.encodeXva(desc, wrongSize, 'none', { now })), /described as/)
  t.ok((await consume(pool.encodeXva(desc, sources(), 'none', { now }))).equals(plain), 'byte for byte')
})

t.test('two exports at once share nothing, one read here and one written by the worker', async (t) => {
  const { path, fd } = await newFile(t)
  const [a] = await Promise.all([consume(pool.encodeXva(desc, sources(), 'none', { now })), pool.writeXva(desc, sources(), 'none', { fd, syncEvery: 4 * MiB }, { now })])
  t.ok(a.equals(plain))
  t.ok(readFileSync(path).equals(plain))
})

t.test('the worker writes the archive into a file itself: the same bytes, its size and MD5, syncs on the way', async (t) => {
  for (const compression of ['none', 'zstd'] as const) {
    const { path, fd } = await newFile(t)
    let md5: string | undefined
    const size = await pool.writeXva(desc, sources(), compression, { fd, syncEvery: 4 * MiB }, { now, md5: (hex) => (md5 = hex) })
    const written = readFileSync(path)
    t.equal(size, written.length, `${compression}: the size written`)
    t.equal(md5, createHash('md5').update(written).digest('hex'), `${compression}: the MD5 of the file`)
    t.ok((compression === 'none' ? written : await collect(decompressor('zstd').end(written))).equals(plain), `${compression}: the archive, byte for byte`)
  }
})

t.test('a failed write or sync in the worker fails the archive; the worker is done with the file before it settles', async (t) => {
  const full = await open('/dev/full', 'w')
  t.teardown(() => full.close())
  await t.rejects(pool.writeXva(desc, sources(), 'none', { fd: full.fd, syncEvery: 64 * MiB }, { now }), { code: 'ENOSPC' }, 'a write (a full disk)')
  // Writes to /dev/null succeed, its datasync does not: the sync started after the first MiB fails a later write.
  const nowhere = await open('/dev/null', 'w')
  t.teardown(() => nowhere.close())
  await t.rejects(pool.writeXva(desc, sources(), 'none', { fd: nowhere.fd, syncEvery: 1 }, { now }), { code: 'EINVAL' }, 'a background sync')
  const { path, fd } = await newFile(t)
  await t.rejects(pool.writeXva(desc, sources({ after: 3, error: new Error('disk went away') }), 'none', { fd, syncEvery: MiB }, { now }), /disk went away/, 'a disk read')
  // Settled means the worker no longer writes: the file does not grow after.
  const size = statSync(path).size
  t.equal((await collect(Readable.from([gzipSync('probe')]).pipe(pool.transform('gzip-decompress')))).toString(), 'probe', 'the worker answers a probe')
  t.equal(statSync(path).size, size, 'nothing written after the failure settled')
  t.ok((await consume(pool.encodeXva(desc, sources(), 'none', { now }))).equals(plain), 'the next export is whole')
})
