import t from 'tap'
import type { Driver } from '../../src/driver/types.js'
import { openLab } from '../helpers/lab.js'
import { driverConformance } from './conformance.js'
import { demoCases, problems } from './fixtures/lab.js'
import { LaggedDriver, randomDelays } from './lagged-driver.js'

const SEED = Number(process.env['KEEL_TEST_LAG_SEED'] ?? Date.now() % 2 ** 31)
const MAX_LAG = 10
t.comment(`lag seed ${SEED} (KEEL_TEST_LAG_SEED replays it)`)

/** The lab behind a lagged index, closed with the test. */
async function lagged(t: Parameters<typeof openLab>[0], options: Parameters<typeof openLab>[1], seed: number): Promise<LaggedDriver> {
  const lab = await openLab(t, options)
  const driver = new LaggedDriver(lab.driver, { delay: randomDelays(seed, MAX_LAG) })
  await driver.open()
  t.teardown(() => driver.close())
  return driver
}

let opened = 0
driverConformance(t, {
  async open(t) {
    // Steps well above the lag, so that an abort sent on the first published change lands half-way.
    const lab = await openLab(t, { stepDelay: 4 * MAX_LAG })
    const driver = new LaggedDriver(lab.driver, { delay: randomDelays(SEED + opened++, MAX_LAG) })
    await driver.open()
    t.teardown(() => driver.close())
    return {
      driver,
      reopen: async (): Promise<Driver> => lagged(t, { dataDir: lab.dataDir, keep: true }, SEED + opened++),
    }
  },
  cases: demoCases,
  problems,
})
