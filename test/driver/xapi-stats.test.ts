import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { StatsTree, XapiStats } from '../../src/driver/types.js'
import { statsOfRrdUpdates } from '../../src/driver/xapi/rrd-updates.js'
import { lastCpuUse } from '../../src/driver/xapi/stats.js'
import { UsageStats } from '../../src/stats/reader.js'
import { VM_RRD_NAMES } from '../../src/stats/rrd-names.js'
import { openDatabase } from '../../src/store/database.js'
import { demoIds } from '../helpers/demo-lab.js'
import { startServer } from '../helpers/server.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

interface ErrorBody {
  code: string
  data: Record<string, unknown>
}

/** Every series of a statistics tree by its path. */
const leaves = (tree: StatsTree, path = ''): Array<[string, Array<number | null>]> =>
  Object.entries(tree).flatMap(([key, value]) => (Array.isArray(value) ? [[`${path}${key}`, value] as [string, Array<number | null>]] : leaves(value, `${path}${key}.`)))

/** The same series, each value within a rounding error of the other (XAPI's units and back). */
function sameSeries(t: Test, actual: XapiStats, expected: XapiStats): void {
  t.equal(actual.endTimestamp, expected.endTimestamp)
  t.equal(actual.interval, expected.interval)
  const got = new Map(leaves(actual.stats))
  t.same([...got.keys()].sort(), leaves(expected.stats).map(([path]) => path).sort(), 'the same metrics')
  const off = leaves(expected.stats).filter(([path, series]) =>
    series.some((value, k) => {
      const other = got.get(path)?.[k]
      return value === null ? other !== null : other === null || other === undefined || Math.abs(other - value) > 1e-9 * Math.max(1, Math.abs(value))
    }),
  )
  t.same(off.map(([path]) => path), [], 'every point as the lab has it')
}

t.test('statistics on the XAPI driver come from the hosts\' RRDs', async (t) => {
  const now = Date.UTC(2026, 10, 22, 12, 0, 2)
  const clock = (): number => now
  const simulator = await startSimulator(t, { clock })
  const server = await startServer({
    config: { driver: { kind: 'xapi' } },
    app: { xapi: { allowHttp: true, graceDelay: 0, clock, index: { retryDelay: 20 }, pools: [{ host: simulator.url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }] } },
  })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  // What Keel on the lab serves for the same objects at the same instant.
  const storeDir = mkdtempSync(join(tmpdir(), 'keel-stats-'))
  const store = openDatabase(storeDir)
  t.teardown(() => {
    store.close()
    rmSync(storeDir, { recursive: true, force: true })
  })
  const lab = new UsageStats(simulator.simulator.services.driver, store, clock)
  const labObject = (id: string) => {
    const record = simulator.simulator.services.driver.getObject(id)
    if (record === undefined) throw new Error(`the lab has no ${id}`)
    return record
  }

  t.test('a running VM: the reference\'s shape, every point the lab\'s', async (t) => {
    const { status, body } = await server.json<XapiStats>(`/rest/v0/vms/${demo.runningVm}/stats`)
    t.equal(status, 200)
    t.equal(body.interval, 5)
    t.same(Object.keys(body.stats).sort(), ['cpus', 'iops', 'memory', 'memoryFree', 'memoryTarget', 'vifErrors', 'vifs', 'xvds'])
    for (const [, series] of leaves(body.stats)) t.equal(series.length, 120)
    sameSeries(t, body, await lab.vmStats(labObject(demo.runningVm), 'seconds'))
  })

  t.test('a paused VM on another host than the master, by the minute', async (t) => {
    const { status, body } = await server.json<XapiStats>(`/rest/v0/vms/${demo.pausedVm}/stats?granularity=minutes`)
    t.equal(status, 200)
    t.equal(body.interval, 60)
    sameSeries(t, body, await lab.vmStats(labObject(demo.pausedVm), 'minutes'))
  })

  t.test('hosts', async (t) => {
    for (const host of [demo.master, demo.host2]) {
      const { status, body } = await server.json<XapiStats>(`/rest/v0/hosts/${host}/stats?granularity=hours`)
      t.equal(status, 200)
      t.ok(['cpus', 'load', 'memory', 'memoryFree', 'pifs'].every((metric) => metric in body.stats))
      sameSeries(t, body, await lab.hostStats(labObject(host), 'hours'))
    }
  })

  t.test('data sources are chosen on the host', async (t) => {
    const path = `/rest/v0/vms/${demo.runningVm}/stats`
    const keys = async (): Promise<string[]> => Object.keys((await server.json<XapiStats>(path)).body.stats).sort()
    const before = await keys()
    t.notOk(before.includes('cpuUsage'), 'cpu_usage is not recorded by default')
    t.equal((await server.request(`${path}/data_source/cpu_usage`, { method: 'PUT' })).status, 204)
    t.same(await keys(), [...before, 'cpuUsage'].sort())
    const unknown = await server.json<ErrorBody>(`${path}/data_source/cpu99`, { method: 'PUT' })
    t.equal(unknown.status, 422)
    t.equal(unknown.body.code, 'INVALID_PARAMETERS')
    t.same(unknown.body.data['errors'], [{ path: 'data_source', message: 'is not a data source of this VM' }])
    t.same(await keys(), [...before, 'cpuUsage'].sort(), 'nothing else recorded')
    const halted = await server.json<ErrorBody>(`/rest/v0/vms/${demo.haltedVm}/stats/data_source/cpu0`, { method: 'DELETE' })
    t.equal(halted.status, 409)
    t.equal(halted.body.code, 'INCORRECT_STATE')
    t.equal((await server.request(`${path}/data_source/cpu_usage`, { method: 'DELETE' })).status, 204)
    t.same(await keys(), before)
    sameSeries(t, (await server.json<XapiStats>(path)).body, await lab.vmStats(labObject(demo.runningVm), 'seconds'))
  })

  t.test('bad requests are refused before any RRD is read', async (t) => {
    const halted = await server.json<ErrorBody>(`/rest/v0/vms/${demo.haltedVm}/stats`)
    t.equal(halted.status, 422, 'a halted VM has no statistics, as the reference answers')
    t.equal(halted.body.code, 'INVALID_PARAMETERS')
    const granularity = await server.json<ErrorBody>(`/rest/v0/vms/${demo.runningVm}/stats?granularity=weeks`)
    t.equal(granularity.status, 400)
    t.equal(granularity.body.code, 'BAD_QUERY_PARAMETER')
  })

  t.test('the simulator\'s /rrd_updates wants a session and a start', async (t) => {
    const session = await simulator.login()
    t.equal((await fetch(`${simulator.url}/rrd_updates?start=0&host=true`)).status, 401)
    t.equal((await fetch(`${simulator.url}/rrd_updates?session_id=${session}&host=true`)).status, 400)
    const { status } = await fetch(`${simulator.url}/rrd_updates?session_id=${session}&start=${now / 1000 - 10}&interval=5&host=true`)
    t.equal(status, 200)
  })
})

t.test('the xport parser', async (t) => {
  const uuid = '0b5d4c1e-0000-4000-8000-000000000001'
  const xml =
    '<?xml version="1.0"?><xport><meta><start>100</start><step>5</step><end>105</end><rows>2</rows><columns>4</columns><legend>' +
    `<entry>AVERAGE:vm:${uuid}:cpu0</entry><entry>AVERAGE:vm:${uuid}:memory_internal_free</entry><entry>AVERAGE:vm:other:cpu0</entry><entry>AVERAGE:vm:${uuid}:unknown_source</entry>` +
    '</legend></meta><data><row><t>105</t><v>0.5</v><v>1024</v><v>1</v><v>7</v></row><row><t>100</t><v>NaN</v><v>2048</v><v>1</v><v>7</v></row></data></xport>'
  t.same(statsOfRrdUpdates(xml, 'vm', uuid, VM_RRD_NAMES), { endTimestamp: 105, interval: 5, stats: { cpus: { '0': [null, 50] }, memoryFree: [2048 * 1024, 1024 * 1024] } }, 'oldest first, in xo-server\'s units, other objects and unknown sources left out')
  for (const bad of ['not xml <', '<html/>', '<xport><meta></meta></xport>', '<xport><meta><step>x</step><end>1</end><legend/></meta><data/></xport>']) {
    t.throws(() => statsOfRrdUpdates(bad, 'vm', uuid, VM_RRD_NAMES), { code: 'RRD_UPDATES_MALFORMED' }, bad)
  }
})

t.test('a host\'s CPU use for the dashboard: the mean of each CPU\'s last point, 0 to 1', async (t) => {
  const stats = (tree: StatsTree): XapiStats => ({ endTimestamp: 100, interval: 5, stats: tree })
  t.equal(lastCpuUse(stats({ cpus: { '0': [10, 20], '1': [30, 40] }, load: [1] })), 0.3)
  t.equal(lastCpuUse(stats({ cpus: { '0': [10, null], '1': [null, null], '2': [50] } })), 0.3, 'a CPU\'s missing points skipped, a CPU without any left out')
  t.equal(lastCpuUse(stats({ load: [1] })), 0, 'no CPU series: no figure')
})
