import t from 'tap'
import { vmDataSources } from '../../src/stats/data-sources.js'
import { windowAt } from '../../src/stats/granularity.js'
import { hostSeries, vmSeries, type VmShape } from '../../src/stats/series.js'

const NOW = Date.UTC(2026, 10, 22, 12, 0, 3)
const steady = () => ({ cpu: 0.5, memory: 1024 })

const vm = (recorded: (name: string) => boolean): VmShape => ({
  id: 'vm-1',
  cpuCount: 2,
  vifs: ['0'],
  disks: ['a', 'b'],
  memorySize: 4096,
  memoryTarget: 4096,
  agent: true,
  startTime: undefined,
  recorded,
})

t.test('windows end on a whole step and hold the RRD\'s number of points', async (t) => {
  const window = windowAt('seconds', NOW)
  t.equal(window.endTimestamp, Date.UTC(2026, 10, 22, 12, 0, 0) / 1000)
  t.equal(window.times.length, 120)
  t.equal(window.times[119], window.endTimestamp)
  t.equal(window.times[0], window.endTimestamp - 119 * 5)
  t.equal(windowAt('days', NOW).times.length, 366)
})

t.test('series follow the usage figures and are the same for the same inputs', async (t) => {
  const window = windowAt('seconds', NOW)
  const shape = vm((name) => vmDataSources(vm(() => true)).get(name) ?? false)
  const first = vmSeries(shape, window, steady)
  t.same(vmSeries(shape, window, steady), first)
  t.same(first.stats['memoryFree'], Array(120).fill(3072))
  const cpus = first.stats['cpus'] as Record<string, number[]>
  for (const series of Object.values(cpus)) t.ok(series.every((value) => value >= 30 && value <= 70), 'a core carries its share of 50 %')
  const other = vmSeries({ ...shape, id: 'vm-2' }, window, steady)
  t.not(JSON.stringify(other.stats['cpus']), JSON.stringify(first.stats['cpus']), 'another VM has its own noise')
})

t.test('only recorded data sources give series', async (t) => {
  const window = windowAt('minutes', NOW)
  const only = vmSeries(vm((name) => name === 'cpu1' || name === 'vbd_xvdb_read'), window, steady)
  t.same(Object.keys(only.stats).sort(), ['cpus', 'xvds'])
  t.same(Object.keys(only.stats['cpus'] as object), ['1'])
  t.same(only.stats['xvds'] !== undefined && Object.keys(only.stats['xvds']), ['r'])
})

t.test('no point before the object started', async (t) => {
  const window = windowAt('seconds', NOW)
  const started = window.times[100] as number
  const stats = hostSeries({ id: 'h', cpuCount: 1, memorySize: 10, startTime: started, pifs: [], srs: ['abcd1234'] }, window, steady)
  const load = stats.stats['load'] as Array<number | null>
  t.ok(load.slice(0, 100).every((value) => value === null))
  t.ok(load.slice(100).every((value) => value !== null))
})
