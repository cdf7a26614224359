import t from 'tap'
import type { DiskWrite, DiskWriteSession } from '../../src/driver/types.js'
import { writeAll } from '../../src/driver/write-all.js'
import { lend } from '../../src/formats/lending.js'

/** A session that records what it is told, and fails the write of `failAt` when given. */
function recorder(failAt?: number): { session: DiskWriteSession; calls: string[] } {
  const calls: string[] = []
  const session: DiskWriteSession = {
    write: async (block) => {
      if (block.index === failAt) throw new Error(`write ${block.index} failed`)
      calls.push(`write ${block.index}`)
    },
    commit: async () => {
      calls.push('commit')
    },
    abort: async () => {
      calls.push('abort')
    },
  }
  return { session, calls }
}

const block = (index: number): DiskWrite => ({ index, data: Buffer.alloc(8, index) })

t.test('every block written, lent ones given back once written, then committed', async (t) => {
  const { session, calls } = recorder()
  const returned: number[] = []
  const blocks = [block(0), block(3)].map((b) => ({ ...b, data: lend(b.data, () => returned.push(b.index)) }))
  await writeAll(session, blocks)
  t.same(calls, ['write 0', 'write 3', 'commit'])
  t.same(returned, [0, 3])
})

t.test('a failed write aborts the session, never commits, and reaches the caller', async (t) => {
  const { session, calls } = recorder(3)
  await t.rejects(writeAll(session, [block(0), block(3), block(5)]), { message: 'write 3 failed' })
  t.same(calls, ['write 0', 'abort'])
})

t.test('a failing source aborts the session too', async (t) => {
  const { session, calls } = recorder()
  async function* source(): AsyncGenerator<DiskWrite> {
    yield block(1)
    throw new Error('truncated')
  }
  await t.rejects(writeAll(session, source()), { message: 'truncated' })
  t.same(calls, ['write 1', 'abort'])
})
