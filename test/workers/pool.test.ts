import t from 'tap'
import { randomBytes } from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { WorkerPool } from '../../workers/pool.js'
import { forTransfer } from '../../workers/messages.js'
import { zeros } from '../../src/formats/blocks.js'
import { collect, run } from '../helpers/disks.js'

const MiB = 1024 * 1024
const pool = new WorkerPool({ size: 2, windowBytes: 4 * MiB })
t.teardown(() => pool.close())

function mixed(blocks: number): Buffer[] {
  return Array.from({ length: blocks }, (_, i) => (i % 2 === 0 ? randomBytes(MiB) : Buffer.alloc(MiB)))
}

t.test('zstd through a worker: the CLI accepts and restores it, and the worker restores the CLI output', async (t) => {
  const input = mixed(6)
  const original = Buffer.concat(input)
  const compressed = await collect(Readable.from(input).pipe(pool.transform('zstd-compress', { level: 1 })))
  t.equal(compressed.readUInt32LE(0), 0xfd2fb528, 'zstd magic')
  t.equal(run('zstd', ['-t', '-q', '-'], compressed).status, 0, 'zstd -t accepts it')
  t.ok(run('zstd', ['-d', '-q', '-c', '-'], compressed).stdout.equals(original))
  const cli = run('zstd', ['-1', '-q', '-c', '-'], original).stdout
  const restored = await collect(Readable.from([cli]).pipe(pool.transform('zstd-decompress')))
  t.ok(restored.equals(original))
})

t.test('XXH64 and SHA-1 in a worker agree with xxhsum and sha1sum, whatever the chunking', async (t) => {
  const data = randomBytes(3 * MiB + 17)
  const chunks = [data.subarray(0, 1), data.subarray(1, 70000), data.subarray(70000, 2 * MiB), data.subarray(2 * MiB)].map((c) => Buffer.from(c))
  const ours = (await collect(Readable.from(chunks).pipe(pool.transform('xxh64')))).toString()
  const theirs = run('xxhsum', ['-H64', '-'], data).stdout.toString().split(/\s/)[0]?.toUpperCase()
  t.equal(ours, theirs)
  t.equal((await collect(Readable.from([Buffer.alloc(MiB)]).pipe(pool.transform('xxh64')))).toString(), '87D2A1B6E1163EF1')
  t.equal((await collect(Readable.from([]).pipe(pool.transform('xxh64')))).toString(), 'EF46DB3751D8E999')
  const sha = (await collect(Readable.from([Buffer.from(data)]).pipe(pool.transform('sha1')))).toString()
  t.equal(sha, run('sha1sum', ['-'], data).stdout.toString().split(' ')[0])
})

t.test('chunks move by transfer; views and small buffers are copied', async (t) => {
  const owned = Buffer.from(new ArrayBuffer(MiB))
  const moved = forTransfer(owned)
  t.equal(moved.chunk, owned)
  t.equal(moved.transfer[0], owned.buffer)
  const zero = zeros()
  const copied = forTransfer(zero)
  t.not(copied.chunk.buffer, zero.buffer, 'the shared zero block is never detached')
  const written = Buffer.from(new ArrayBuffer(MiB)).fill(7)
  const out = await collect(Readable.from([written, zeros()]).pipe(pool.transform('sha1')))
  t.equal(written.length, 0, 'a written chunk that owned its ArrayBuffer was transferred')
  t.equal(zeros().length, 2 * MiB)
  t.equal(out.length, 40)
})

t.test('backpressure: a stalled reader stops the writer after a bounded number of chunks', async (t) => {
  const stream = pool.transform('zstd-compress', { level: 1 })
  let produced = 0
  const source = new Readable({
    read() {
      produced++
      this.push(produced > 200 ? null : randomBytes(MiB))
    },
  })
  source.pipe(stream)
  await new Promise((resolve) => setTimeout(resolve, 1500))
  t.ok(produced < 40, `only ${produced} MiB were read from the source while nobody consumed the output`)
  let consumed = 0
  await pipeline(
    stream,
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        consumed += chunk.length
        callback()
      },
    }),
  )
  t.equal(produced, 201)
  t.ok(consumed > 200 * MiB, 'random data does not compress')
})

t.test('errors cross the thread boundary', async (t) => {
  await t.rejects(collect(Readable.from([Buffer.from('not zstd at all')]).pipe(pool.transform('zstd-decompress'))), /frame|Zstandard|header/i)
  await t.rejects(collect(Readable.from([Buffer.from('x')]).pipe(pool.transform('no-such-pipeline'))), /no pipeline named no-such-pipeline/)
  const truncated = run('zstd', ['-1', '-q', '-c', '-'], randomBytes(MiB)).stdout.subarray(0, 5000)
  await t.rejects(collect(Readable.from([truncated]).pipe(pool.transform('zstd-decompress'))), /ended|truncated|middle/i)
})

t.test('an abandoned stream frees its worker slot', async (t) => {
  const stream = pool.transform('zstd-compress')
  stream.write(randomBytes(MiB))
  stream.destroy()
  const again = await collect(Readable.from([Buffer.from('hello')]).pipe(pool.transform('sha1')))
  t.equal(again.toString(), 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d')
})

t.test('an idle worker ends after idleMs, and the next stream starts another', async (t) => {
  const short = new WorkerPool({ size: 2, idleMs: 50 })
  t.teardown(() => short.close())
  const sha1 = (text: string): Promise<string> => collect(Readable.from([Buffer.from(text)]).pipe(short.transform('sha1'))).then(String)
  t.equal(await sha1('hello'), 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d')
  t.equal(short.threads, 1, 'one worker while in use')
  const held = short.transform('zstd-compress')
  held.write(randomBytes(1024))
  await new Promise((resolve) => setTimeout(resolve, 150))
  t.equal(short.threads, 1, 'a worker with a stream open stays, however long it waits')
  held.destroy()
  await new Promise((resolve) => setTimeout(resolve, 150))
  t.equal(short.threads, 0, 'gone once idle for idleMs')
  t.equal(await sha1('hello'), 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d', 'a new worker answers')
  t.equal(short.threads, 1)
})
