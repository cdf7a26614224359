import t from 'tap'
import { advanced, newPoints } from '../../src/stats/advance.js'
import { vmDataSources } from '../../src/stats/data-sources.js'
import { windowAt } from '../../src/stats/granularity.js'
import { hostSeries, vmSeries, type HostShape, type VmShape } from '../../src/stats/series.js'

const NOW = Date.UTC(2026, 10, 22, 12, 0, 3)
// Usage that changes from one instant to the next, so a point out of place would show.
const varying = (ms: number) => ({ cpu: 0.5 + 0.4 * Math.sin(ms / 7e5), memory: 1024 + (ms % 977) })

const host: HostShape = { id: 'host-1', cpuCount: 4, memorySize: 8192, startTime: NOW / 1000 - 300, pifs: ['0', '1'], srs: ['0a1b2c3d'] }
const vm: VmShape = {
  id: 'vm-1',
  cpuCount: 2,
  vifs: ['0'],
  disks: ['a', 'b'],
  memorySize: 4096,
  memoryTarget: 4096,
  agent: true,
  startTime: undefined,
  recorded: (name) => vmDataSources({ cpuCount: 2, vifs: ['0'], disks: ['a', 'b'] }).has(name),
}

t.test('a window moved on by some steps: the same bytes as computed whole', async (t) => {
  const cases = [
    ['host', (window: ReturnType<typeof windowAt>) => hostSeries(host, window, varying)],
    ['VM', (window: ReturnType<typeof windowAt>) => vmSeries(vm, window, varying)],
  ] as const
  for (const [name, make] of cases) {
    for (const granularity of ['seconds', 'hours'] as const) {
      const start = windowAt(granularity, NOW)
      const previous = make(start)
      for (const steps of [1, 7, start.times.length - 1]) {
        const window = windowAt(granularity, NOW + steps * start.interval * 1000)
        const moved = advanced(previous, make(newPoints(window, steps)), steps, window)
        t.equal(JSON.stringify(moved), JSON.stringify(make(window)), `${name}, ${granularity}, ${steps} steps`)
      }
    }
  }
  const window = windowAt('seconds', NOW + 5000)
  t.ok(JSON.stringify(hostSeries(host, window, varying).stats['memoryFree']).includes('null'), 'the host\'s start falls in the window: nulls before it, kept in place')
})

t.test('series of another shape are not joined', async (t) => {
  const start = windowAt('seconds', NOW)
  const window = windowAt('seconds', NOW + 5000)
  const previous = hostSeries(host, start, varying)
  t.equal(advanced(previous, hostSeries({ ...host, srs: ['ffffffff'] }, newPoints(window, 1), varying), 1, window), undefined, 'an SR the earlier series lack')
  t.equal(advanced(previous, vmSeries(vm, newPoints(window, 1), varying), 1, window), undefined, 'a VM\'s metrics over a host\'s')
})
