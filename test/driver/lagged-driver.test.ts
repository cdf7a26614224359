import t from 'tap'
import type { ObjectChange, XoRecord } from '../../src/driver/types.js'
import { isKeelError } from '../../src/errors.js'
import { context, openLab } from '../helpers/lab.js'
import { named } from './fixtures/lab.js'
import { LaggedDriver, type Delay } from './lagged-driver.js'

const HOUR = 3_600_000
// Far above what the operations between take, even on a busy machine.
const SLOW = 1_000

async function lagged(t: Parameters<typeof openLab>[0], delay: Delay): Promise<{ driver: LaggedDriver; published: ObjectChange[] }> {
  const lab = await openLab(t)
  const driver = new LaggedDriver(lab.driver, { delay })
  await driver.open()
  t.teardown(() => driver.close())
  const published: ObjectChange[] = []
  driver.subscribe((change) => published.push(change))
  return { driver, published }
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; data: unknown }> {
  try {
    await promise
  } catch (error) {
    if (isKeelError(error)) return { code: error.code, data: error.data }
    throw error
  }
  return { code: 'no failure', data: undefined }
}

t.test('an operation resolves before its change is in the index; settled() waits for it', async (t) => {
  const { driver, published } = await lagged(t, () => 20)
  const vm = named(driver, 'VM', 'web-01')
  await driver.update(vm, { nameDescription: 'lagging' })
  t.equal(driver.getObject(vm.id), vm, 'the index still shows the record as it was')
  t.same(published, [], 'nothing published yet')
  await driver.settled()
  t.equal(driver.getObject(vm.id)?.['name_description'], 'lagging')
  t.equal(published.length, 1)
})

t.test('changes to different objects show out of step, those of one object in order', async (t) => {
  let slow = ''
  const { driver, published } = await lagged(t, (change) => (change.object.id === slow ? SLOW : 0))
  const first = named(driver, 'VM', 'web-01')
  const second = named(driver, 'VM', 'web-02')
  slow = first.id
  await driver.update(first, { nameDescription: 'one' })
  await driver.update(first, { nameDescription: 'two' })
  await driver.update(second, { nameDescription: 'three' })
  await driver.settled()
  t.same(
    published.map((change) => [change.object.id, change.object['name_description']]),
    [
      [second.id, 'three'],
      [first.id, 'one'],
      [first.id, 'two'],
    ],
  )
})

t.test('objects added out of step are listed in the order they were created', async (t) => {
  let slowVm = ''
  const { driver } = await lagged(t, (change) => (change.kind === 'add' && change.object.$snapshot_of === slowVm ? SLOW : 0))
  const first = named(driver, 'VM', 'web-01')
  const second = named(driver, 'VM', 'web-02')
  slowVm = first.id
  const a = await driver.perform(first, 'snapshot', { name_label: 'a' }, context())
  const b = await driver.perform(second, 'snapshot', { name_label: 'b' }, context())
  t.equal((await driver.waitFor(b?.id ?? '')).name_label, 'b')
  t.equal(driver.getObject(a?.id ?? ''), undefined, 'the earlier snapshot is not shown yet')
  await driver.settled()
  const listed = [...driver.objectsOfType('VM-snapshot')].map((record) => record.id)
  t.same(listed.slice(-2), [a?.id, b?.id])
})

t.test('operations act on the object as the source has it, not on the lagging record', async (t) => {
  const { driver } = await lagged(t, () => 20)
  const vm = named(driver, 'VM', 'staging-app')
  await driver.perform(vm, 'start', {}, context())
  t.equal(driver.getObject(vm.id), vm, 'the index still says Halted')
  t.same(await codeOf(driver.perform(vm, 'start', {}, context())), { code: 'INCORRECT_STATE', data: { actual: 'Running', expected: 'Halted', object: vm.id, property: 'power_state' } })
  await driver.settled()
})

t.test('settled() and waitFor() give up with INDEX_TIMEOUT; closing rejects the waits still pending', async (t) => {
  const { driver } = await lagged(t, () => HOUR)
  const vm = named(driver, 'VM', 'web-01')
  await driver.update(vm, { nameDescription: 'never shown' })
  t.same(await codeOf(driver.settled({ timeout: 20 })), { code: 'INDEX_TIMEOUT', data: { timeout: 20 } })
  t.same(await codeOf(driver.waitFor(vm.id, { timeout: 20, until: (record: XoRecord) => record['name_description'] === 'never shown' })), {
    code: 'INDEX_TIMEOUT',
    data: { id: vm.id, timeout: 20 },
  })
  const barrier = codeOf(driver.settled())
  const wait = codeOf(driver.waitFor('no-such-id'))
  await driver.close()
  t.equal((await barrier).code, 'SERVICE_UNAVAILABLE')
  t.equal((await wait).code, 'SERVICE_UNAVAILABLE')
})
