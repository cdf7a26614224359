import t from 'tap'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { WorkerPool } from '../../workers/pool.js'
import { forTransfer } from '../../workers/messages.js'
import { WORKER_NICENESS } from '../../workers/thread-priority.js'
import { zeros } from '../../src/formats/blocks.js'
import { collect, run } from '../helpers/disks.js'

const MiB = 1024 * 1024
const pool = new WorkerPool({ size: 2, windowBytes: 4 * MiB })
t.teardown(() => pool.close())

function mixed(blocks: number): Buffer[] {
  return Array.from({ length: blocks }, (_, i) => (i % 2 === 0 ? randomBytes(MiB) : Buffer.alloc(MiB)))
}

/** Resolves once `condition` holds, checked every few milliseconds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

/** `zstd -1` of some bytes, as the CLI writes it. */
const zstdOf = (data: Buffer): Buffer => run('zstd', ['-1', '-q', '-c', '-'], data).stdout

/** Bytes restored by a pool's zstd pipeline. */
const unzstd = (workers: WorkerPool, compressed: Buffer): Promise<Buffer> => collect(Readable.from([compressed]).pipe(workers.transform('zstd-decompress')))

t.test('zstd and gzip through a worker restore what their CLIs wrote, whatever the chunking', async (t) => {
  const original = Buffer.concat(mixed(6))
  const cli = zstdOf(original)
  const pieces = [cli.subarray(0, 1), cli.subarray(1, 70000), cli.subarray(70000)].map((piece) => Buffer.from(piece))
  t.ok((await collect(Readable.from(pieces).pipe(pool.transform('zstd-decompress')))).equals(original), 'zstd')
  const gzipped = run('gzip', ['-1', '-c', '-'], original).stdout
  t.ok((await collect(Readable.from([gzipped]).pipe(pool.transform('gzip-decompress')))).equals(original), 'gzip')
})

t.test('chunks move by transfer; views and small buffers are copied', async (t) => {
  const owned = Buffer.from(new ArrayBuffer(MiB))
  const moved = forTransfer(owned)
  t.equal(moved.chunk, owned)
  t.equal(moved.transfer[0], owned.buffer)
  const zero = zeros()
  const copied = forTransfer(zero)
  t.not(copied.chunk.buffer, zero.buffer, 'the shared zero block is never detached')
  const original = randomBytes(MiB)
  const gzipped = run('gzip', ['-1', '-c', '-'], original).stdout
  const written = Buffer.from(new ArrayBuffer(gzipped.length))
  gzipped.copy(written)
  // gunzip ignores what follows the end of its stream: the zero block only has to cross the boundary.
  const out = await collect(Readable.from([written, zeros()]).pipe(pool.transform('gzip-decompress')))
  t.equal(written.length, 0, 'a written chunk that owned its ArrayBuffer was transferred')
  t.equal(zeros().length, 2 * MiB)
  t.ok(out.equals(original))
})

t.test('backpressure: a stalled reader stops the writer after a bounded number of chunks', async (t) => {
  const stream = pool.transform('zstd-decompress')
  // Random data does not compress: each frame is a MiB in and a MiB out.
  const frame = zstdOf(randomBytes(MiB))
  let produced = 0
  const source = new Readable({
    read() {
      produced++
      this.push(produced > 200 ? null : Buffer.from(frame))
    },
  })
  source.pipe(stream)
  // Stalled: the worker filled its output window and stopped, so the writes wait and the pipe paused the source.
  await until(() => stream.readableLength >= 4 * MiB && stream.writableNeedDrain && source.readableFlowing === false)
  t.ok(stream.readableLength <= 5 * MiB, `the output held is the window and one frame at most (${stream.readableLength} bytes)`)
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
  t.equal(consumed, 200 * MiB, 'every frame restored')
})

t.test('errors cross the thread boundary', async (t) => {
  await t.rejects(collect(Readable.from([Buffer.from('not zstd at all')]).pipe(pool.transform('zstd-decompress'))), /frame|Zstandard|header/i)
  await t.rejects(collect(Readable.from([Buffer.from('x')]).pipe(pool.transform('no-such-pipeline'))), /no pipeline named no-such-pipeline/)
  const truncated = run('zstd', ['-1', '-q', '-c', '-'], randomBytes(MiB)).stdout.subarray(0, 5000)
  await t.rejects(collect(Readable.from([truncated]).pipe(pool.transform('zstd-decompress'))), /ended|truncated|middle/i)
})

t.test('an abandoned stream frees its worker slot', async (t) => {
  const stream = pool.transform('zstd-decompress')
  stream.write(zstdOf(randomBytes(MiB)))
  stream.destroy()
  t.equal((await unzstd(pool, zstdOf(Buffer.from('hello')))).toString(), 'hello')
})

t.test('an idle worker ends after idleMs, and the next stream starts another', async (t) => {
  const short = new WorkerPool({ size: 2, idleMs: 50 })
  t.teardown(() => short.close())
  const hello = zstdOf(Buffer.from('hello'))
  t.equal((await unzstd(short, hello)).toString(), 'hello')
  t.equal(short.threads, 1, 'one worker while in use')
  const heldBytes = randomBytes(1024)
  const held = short.transform('zstd-decompress')
  held.write(zstdOf(heldBytes))
  // A second worker starts while the first holds a stream, and retires once idle for idleMs:
  // by then a retirement the first had been given would have come too.
  t.equal((await unzstd(short, hello)).toString(), 'hello')
  t.equal(short.threads, 2, 'a second worker while the first holds a stream')
  await until(() => short.threads === 1)
  held.end()
  t.ok((await collect(held)).equals(heldBytes), 'a worker with a stream open stays, however long it waits')
  await until(() => short.threads === 0)
  t.pass('gone once idle for idleMs')
  t.equal((await unzstd(short, hello)).toString(), 'hello', 'a new worker answers')
  t.equal(short.threads, 1)
})

/** The nice value of each of this process's threads (field 19 of /proc/self/task/<tid>/stat), by thread id. */
function niceByThread(): Map<number, number> {
  const nice = new Map<number, number>()
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // The command name, in parentheses, may hold spaces: the fields are counted after it.
    nice.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]))
  }
  return nice
}

t.test('a worker runs at a lower priority than the API: its per-byte work yields the core to the main thread', { skip: process.platform !== 'linux' && 'thread priorities are read from /proc' }, async (t) => {
  const workers = new WorkerPool({ size: 1, windowBytes: 4 * MiB })
  t.teardown(() => workers.close())
  const before = niceByThread()
  await unzstd(workers, zstdOf(Buffer.alloc(MiB)))
  const main = before.get(process.pid) ?? NaN
  const started = [...niceByThread()].filter(([tid]) => !before.has(tid))
  t.equal(started.filter(([, nice]) => nice === Math.min(19, main + WORKER_NICENESS)).length, 1, 'the worker thread runs nicer than the process')
  t.equal(niceByThread().get(process.pid), main, 'the main thread keeps its priority')
})
