import t from 'tap'
import { IndexWaits } from '../../src/driver/index-waits.js'
import type { XoRecord } from '../../src/driver/types.js'

/** An index the test edits by hand, telling the waits as a driver does. */
function index(): { waits: IndexWaits; set(record: XoRecord): void; remove(id: string): void } {
  const records = new Map<string, XoRecord>()
  const waits = new IndexWaits((id) => records.get(id))
  return {
    waits,
    set(record) {
      records.set(record.id, record)
      waits.changed(record.id)
    },
    remove(id) {
      records.delete(id)
      waits.changed(id)
    },
  }
}

const vm = (state: string): XoRecord => Object.freeze({ id: 'vm', type: 'VM', power_state: state })

t.test('a wait resolves with the first record that meets its condition, a removal in between resolving nothing', async (t) => {
  const { waits, set, remove } = index()
  const running = waits.waitFor('vm', { until: (record) => record.power_state === 'Running' })
  const any = waits.waitFor('vm')
  set(vm('Halted'))
  remove('vm')
  const wanted = vm('Running')
  set(wanted)
  t.equal((await any).power_state, 'Halted')
  t.equal(await running, wanted)
})

t.test('a condition that throws fails its own wait only', async (t) => {
  const { waits, set } = index()
  const failing = waits.waitFor('vm', {
    until: () => {
      throw new Error('bad condition')
    },
  })
  const other = waits.waitFor('vm')
  set(vm('Halted'))
  await t.rejects(failing, { message: 'bad condition' })
  t.equal((await other).power_state, 'Halted')
})

t.test('closing rejects every pending wait with the error given', async (t) => {
  const { waits } = index()
  const pending = waits.waitFor('vm')
  const closed = new Error('closed')
  waits.close(closed)
  await t.rejects(pending, closed)
})
