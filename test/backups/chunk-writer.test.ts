import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
