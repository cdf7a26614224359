import t from 'tap'
import { openLab } from '../helpers/lab.js'
import { driverConformance } from './conformance.js'
import { demoCases, problems } from './fixtures/lab.js'

driverConformance(t, {
  async open(t) {
    // Steps of 1 ms: long enough to be distinct steps, short enough for a quick suite.
    const lab = await openLab(t, { stepDelay: 1 })
    return {
      driver: lab.driver,
      reopen: async () => (await openLab(t, { dataDir: lab.dataDir, keep: true })).driver,
    }
  },
  cases: demoCases,
  problems,
})
