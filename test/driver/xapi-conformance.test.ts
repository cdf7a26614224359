import t from 'tap'
import type { Driver } from '../../src/driver/types.js'
import { connectDriver, simulatedPool } from '../helpers/xapi-driver.js'
import { driverConformance } from './conformance.js'
import { named } from './fixtures/lab.js'

driverConformance(t, {
  async open(t) {
    // Steps of 20 ms: longer than the index takes to show a change, so an abort on the first one lands half-way.
    const { simulator, driver } = await simulatedPool(t, { simulator: { stepDelay: 20 } })
    return {
      driver,
      reopen: async (): Promise<Driver> => (await connectDriver(t, simulator.url)).driver,
    }
  },
  cases: (driver) => {
    const [snapshot] = driver.objectsOfType('VM-snapshot')
    if (snapshot === undefined) throw new Error('the demo lab has no VM-snapshot')
    return {
      action: { object: named(driver, 'VM', 'staging-app'), action: 'start' },
      wrongState: { object: named(driver, 'VM', 'staging-app'), action: 'pause' },
      abortable: { object: named(driver, 'host', 'xcp-ng-02'), action: 'clean_reboot' },
      patch: { object: named(driver, 'VM', 'web-01'), patch: { nameDescription: 'conformance' }, expect: { name_description: 'conformance' } },
      destroy: snapshot,
      snapshotVm: named(driver, 'VM', 'web-01'),
    }
  },
})
