import t from 'tap'
import type { Driver, XoRecord } from '../../src/driver/types.js'
import { openLab } from '../helpers/lab.js'
import { driverConformance } from './conformance.js'
import { named, problems } from './fixtures/lab.js'

function first(driver: Driver, type: string): XoRecord {
  const [record] = driver.objectsOfType(type)
  if (record === undefined) throw new Error(`the demo lab has no ${type}`)
  return record
}

driverConformance(t, {
  async open(t) {
    // Steps of 1 ms: long enough to be distinct steps, short enough for a quick suite.
    const lab = await openLab(t, { stepDelay: 1 })
    return {
      driver: lab.driver,
      reopen: async () => (await openLab(t, { dataDir: lab.dataDir, keep: true })).driver,
    }
  },
  cases: (driver) => ({
    action: { object: named(driver, 'VM', 'staging-app'), action: 'start' },
    wrongState: { object: named(driver, 'VM', 'staging-app'), action: 'pause' },
    // disables the host first, then evacuates it: an abort after that first change re-enables it
    abortable: { object: named(driver, 'host', 'xcp-ng-02'), action: 'clean_reboot' },
    patch: { object: named(driver, 'VM', 'web-01'), patch: { nameDescription: 'conformance' }, expect: { name_description: 'conformance' } },
    destroy: first(driver, 'VM-snapshot'),
    snapshotVm: named(driver, 'VM', 'web-01'),
  }),
  problems,
})
