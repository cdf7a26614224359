import t from 'tap'
import { context } from '../helpers/lab.js'
import { simulatedPool } from '../helpers/xapi-driver.js'
import { named } from './fixtures/lab.js'

t.test('an action whose task settles while the event log is lost still ends: the resync reads the followed tasks again', async (t) => {
  const { simulator, driver } = await simulatedPool(t, { simulator: { stepDelay: 20 } })
  const { db } = simulator.simulator.services
  const vm = named(driver, 'VM', 'web-01')
  let lost = false
  // The log is forgotten in the very turn the task settles, before event.from reads it: the settling is never an event.
  const unlisten = db.onChange(() => {
    if (lost) return
    if (![...db.ofClass('task')].some((task) => task.record['status'] === 'success')) return
    lost = true
    db.forgetLog()
  })
  t.teardown(unlisten)
  t.equal(await driver.perform(vm, 'clean_shutdown', {}, context()), undefined)
  t.ok(lost, 'the settling was lost with the log')
  await driver.settled()
  t.equal(driver.getObject(vm.id)?.['power_state'], 'Halted')
})
