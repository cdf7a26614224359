import t from 'tap'
import { BATCH, framed } from '../../src/api/framing.js'
import { ChunkPool } from '../../src/http/chunk-pool.js'

/** Items of sizes from 1 byte to past a batch, each filled with one letter. */
function items(sizes: readonly number[]): Buffer[] {
  return sizes.map((size, i) => Buffer.alloc(size, 97 + (i % 26)))
}

const expectedJson = (list: readonly Buffer[]): string => `[${list.map((item) => item.toString()).join(',')}]`
const expectedNdjson = (list: readonly Buffer[]): string => list.map((item) => item.toString() + '\n').join('')

const cases: Array<[name: string, sizes: number[]]> = [
  ['none', []],
  ['one', [5]],
  ['many small', Array.from({ length: 5000 }, (_, i) => 1 + ((i * 37) % 200))],
  ['one past a batch among small ones', [10, 20, BATCH + 5, 30, BATCH, 1]],
  ['a batch exactly, first', [BATCH, 3]],
  ['items of half a batch', [BATCH / 2, BATCH / 2, BATCH / 2 - 1, BATCH / 2 + 1]],
]

t.test('the chunks join to the JSON array and the NDJSON lines, each but the last at least a batch', async (t) => {
  for (const [name, sizes] of cases) {
    const list = items(sizes)
    for (const ndjson of [false, true]) {
      const chunks = [...framed(list, ndjson)]
      t.equal(Buffer.concat(chunks).toString(), ndjson ? expectedNdjson(list) : expectedJson(list), `${name}, ${ndjson ? 'NDJSON' : 'JSON'}`)
      t.ok(chunks.slice(0, -1).every((chunk) => chunk.length >= BATCH), `${name}: full chunks`)
    }
  }
})

t.test('listings framed at the same time do not mix, with and without a pool', async (t) => {
  const pool = new ChunkPool(2 * BATCH, 4)
  const a = items(Array.from({ length: 3000 }, (_, i) => 50 + (i % 90)))
  const b = items(Array.from({ length: 2000 }, (_, i) => 120 - (i % 70)).concat([BATCH + 1]))
  const first = framed(a, false, pool)
  const second = framed(b, true)
  const got: [Buffer[], Buffer[]] = [[], []]
  for (;;) {
    const x = first.next()
    const y = second.next()
    // A pooled chunk is copied before it goes back, as the socket's write does.
    if (x.done !== true) {
      got[0].push(Buffer.from(x.value))
      pool.release(x.value)
    }
    if (y.done !== true) got[1].push(y.value)
    if (x.done === true && y.done === true) break
  }
  t.equal(Buffer.concat(got[0]).toString(), expectedJson(a))
  t.equal(Buffer.concat(got[1]).toString(), expectedNdjson(b))
})
