import { fstatSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { writeChunks } from '../../src/backups/chunk-writer.js'
import { lend } from '../../src/formats/lending.js'

const folder = mkdtempSync(join(tmpdir(), 'keel-chunk-writer-'))
t.teardown(() => rmSync(folder, { recursive: true, force: true }))

/** Chunks of 0 to 699 bytes, each filled with its own number, each lent with a record of its return. */
function chunks(count: number): { chunks: Buffer[]; returned: Set<number>; expected: Buffer } {
  const returned = new Set<number>()
  const list = Array.from({ length: count }, (_, i) => lend(Buffer.alloc((i * 37) % 700, i % 251), () => returned.add(i)))
  return { chunks: list, returned, expected: Buffer.concat(list) }
}

t.test('chunks land in their order however they are gathered or split into writes, and however many are in flight, each given back once written', async (t) => {
  for (const writeBytes of [333, 500, 1000, 64 * 1024]) {
    const { chunks: list, returned, expected } = chunks(300)
    const path = join(folder, `order-${writeBytes}`)
    const file = await open(path, 'wx')
    const seen: number[] = []
    const size = await writeChunks(
      file,
      (async function* () {
        yield* list
      })(),
      { writeBytes, each: (chunk) => seen.push(chunk.length) },
    )
    await file.close()
    t.equal(size, expected.length, `writes of ${writeBytes} B: the size`)
    t.ok(readFileSync(path).equals(expected), 'the bytes, in order')
    t.same(seen, list.map((chunk) => chunk.length), '`each` saw every chunk in order')
    t.equal(returned.size, list.length, 'every chunk given back')
  }
})

t.test('a failing source: the write under way settles, and the error is the source’s', async (t) => {
  const { chunks: list, returned } = chunks(10)
  const path = join(folder, 'failing')
  const file = await open(path, 'wx')
  const source = async function* (): AsyncGenerator<Buffer> {
    yield* list.slice(0, 5)
    throw new Error('the disk went away')
  }
  await t.rejects(writeChunks(file, source(), { writeBytes: 1 }), /the disk went away/)
  await file.close()
  const written = Buffer.concat(list.slice(0, 5))
  t.ok(readFileSync(path).equals(written), 'what was read before the failure is in the file')
  t.same([...returned].sort((a, b) => a - b), [0, 1, 2, 3, 4])
})

t.test('a failing write stops the run with its error', async (t) => {
  const { chunks: list } = chunks(20)
  const path = join(folder, 'read-only')
  await (await open(path, 'wx')).close()
  const file = await open(path, 'r')
  let pulled = 0
  const source = async function* (): AsyncGenerator<Buffer> {
    for (const chunk of list) {
      pulled++
      yield chunk
    }
  }
  await t.rejects(writeChunks(file, source(), { writeBytes: 1 }), { code: 'EBADF' })
  await file.close()
  t.ok(pulled < list.length, 'the source is not read to its end')
  t.equal(readFileSync(path).length, 0)
})

/** `file`'s datasync replaced: each call records the file's size when it starts and is answered by `answer`. */
function spySyncs(file: FileHandle, answer: (call: number, real: () => Promise<void>) => Promise<void>): { sizes: number[]; running: () => number; most: () => number } {
  const real = file.datasync.bind(file)
  const sizes: number[] = []
  let running = 0
  let most = 0
  file.datasync = async () => {
    sizes.push(fstatSync(file.fd).size)
    most = Math.max(most, ++running)
    try {
      await answer(sizes.length, real)
    } finally {
      running--
    }
  }
  return { sizes, running: () => running, most: () => most }
}

t.test('write-back: a sync starts each time syncEvery more bytes are on file, one at a time, the writes going on; all have ended when the write resolves', async (t) => {
  const { chunks: list, returned, expected } = chunks(300)
  const path = join(folder, 'write-back')
  const file = await open(path, 'wx')
  // Each sync slower than many writes, so writes go on while one runs.
  const syncs = spySyncs(file, async (_, real) => {
    await sleep(2)
    await real()
  })
  const size = await writeChunks(
    file,
    (async function* () {
      yield* list
    })(),
    { writeBytes: 333, syncEvery: 10_000 },
  )
  t.equal(syncs.running(), 0, 'no sync runs on after the write resolved')
  await file.close()
  t.equal(size, expected.length)
  t.ok(readFileSync(path).equals(expected), 'the bytes, in order')
  t.equal(returned.size, list.length, 'every chunk given back')
  t.ok(syncs.sizes.length >= 1, `syncs started while writing: ${syncs.sizes.length}`)
  t.ok((syncs.sizes[0] ?? 0) >= 10_000, 'the first once syncEvery bytes were written')
  t.ok(syncs.sizes.every((at, i) => at < expected.length && at - (syncs.sizes[i - 1] ?? 0) >= 10_000), `each syncEvery bytes after the last, before the end: ${syncs.sizes.join(', ')}`)
  t.equal(syncs.most(), 1, 'one sync at a time')
})

t.test('write-back: a failed sync fails the write with its error, and no more is read, written or synced', async (t) => {
  const { chunks: list } = chunks(300)
  const path = join(folder, 'sync-fails')
  const file = await open(path, 'wx')
  const failure = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })
  const syncs = spySyncs(file, () => Promise.reject(failure))
  let pulled = 0
  const source = async function* (): AsyncGenerator<Buffer> {
    for (const chunk of list) {
      pulled++
      yield chunk
    }
  }
  await t.rejects(writeChunks(file, source(), { writeBytes: 333, syncEvery: 10_000 }), { code: 'EIO', message: failure.message })
  const size = fstatSync(file.fd).size
  await file.close()
  t.equal(syncs.sizes.length, 1, 'no sync after the failed one')
  t.ok(pulled < list.length, `the source is not read to its end (${pulled} of ${list.length})`)
  t.ok(size < 10_000 + 3 * 333, `the writes stop after the failure: ${size} bytes on file`)
})

t.test('write-back: a sync running when the source fails has ended before the write rejects', async (t) => {
  const { chunks: list } = chunks(300)
  const path = join(folder, 'sync-then-source-fails')
  const file = await open(path, 'wx')
  const order: string[] = []
  const syncs = spySyncs(file, async (_, real) => {
    await sleep(20)
    await real()
    order.push('sync ended')
  })
  const source = async function* (): AsyncGenerator<Buffer> {
    for (const chunk of list) {
      if (syncs.sizes.length > 0) throw new Error('the disk went away')
      yield chunk
    }
  }
  await writeChunks(file, source(), { writeBytes: 333, syncEvery: 10_000 }).catch((error: Error) => order.push(`write failed: ${error.message}`))
  await file.close()
  t.same(order, ['sync ended', 'write failed: the disk went away'])
})
