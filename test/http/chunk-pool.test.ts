import t from 'tap'
import { ChunkPool } from '../../src/http/chunk-pool.js'

t.test('ChunkPool joins parts into a pooled buffer and reuses it once released', async (t) => {
  const pool = new ChunkPool(16, 2)
  const chunk = pool.join([Buffer.from('ab'), Buffer.from('cde')], 5)
  t.equal(chunk?.toString(), 'abcde')
  t.equal(pool.join([Buffer.from('x'.repeat(17))], 17), undefined, 'larger than a pooled buffer')
  if (chunk === undefined) return
  const other = pool.join([Buffer.from('fg')], 2)
  t.not(other?.buffer, chunk.buffer, 'a chunk still in use is not handed out again')
  pool.release(chunk)
  pool.release(chunk)
  const again = pool.join([Buffer.from('h')], 1)
  t.equal(again?.buffer, chunk.buffer, 'the released memory comes back')
  t.equal(again?.toString(), 'h')
  t.not(pool.join([Buffer.from('i')], 1)?.buffer, chunk.buffer, 'released twice, handed out once')
})

t.test('ChunkPool ignores buffers it did not make, and keeps a bounded number', async (t) => {
  const pool = new ChunkPool(16, 1)
  const foreign = Buffer.from(new ArrayBuffer(16))
  pool.release(foreign)
  t.not(pool.join([Buffer.from('a')], 1)?.buffer, foreign.buffer)
  const first = pool.join([Buffer.from('a')], 1)
  const second = pool.join([Buffer.from('b')], 1)
  if (first === undefined || second === undefined) {
    t.fail('chunks expected')
    return
  }
  pool.release(first)
  pool.release(second)
  t.equal(pool.join([Buffer.from('c')], 1)?.buffer, first.buffer)
  t.not(pool.join([Buffer.from('d')], 1)?.buffer, second.buffer, 'only one was kept')
})
