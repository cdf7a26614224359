import t from 'tap'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { BlockPool } from '../../src/formats/block-pool.js'
import { giveBack } from '../../src/formats/lending.js'

t.test('a block lent and given back is lent again; nothing else is taken in', (t) => {
  const pool = new BlockPool(2)
  const first = pool.take()
  t.equal(first.length, BLOCK_SIZE)
  t.not(first.buffer.byteLength, 8192, 'a buffer of its own, not a slice of node’s small pool')
  giveBack(first)
  t.equal(pool.idle, 1)
  t.equal(pool.take(), first, 'the same buffer comes back')
  t.equal(pool.idle, 0)

  giveBack(Buffer.alloc(BLOCK_SIZE))
  giveBack(first.subarray(0, BLOCK_SIZE / 2))
  t.equal(pool.idle, 0, 'a foreign buffer and a view into a lent one are not taken in')

  giveBack(first)
  giveBack(first)
  t.equal(pool.idle, 1, 'a buffer given back twice is held once')
  t.end()
})

t.test('the pool holds at most its bound of idle buffers, and never a detached one', (t) => {
  const pool = new BlockPool(2)
  const lent = [pool.take(), pool.take(), pool.take()]
  for (const buffer of lent) giveBack(buffer)
  t.equal(pool.idle, 2)
  const moved = pool.take()
  const backing = moved.buffer as ArrayBuffer
  structuredClone(backing, { transfer: [backing] })
  t.equal(moved.length, 0, 'detached by the transfer')
  giveBack(moved)
  t.equal(pool.idle, 1, 'a detached buffer is not kept')
  t.end()
})
