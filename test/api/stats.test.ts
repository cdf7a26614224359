import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedUser } from '../helpers/scoped-user.js'
import { startServer } from '../helpers/server.js'

type Series = Array<number | null>
interface Stats {
  endTimestamp: number
  interval: number
  stats: Record<string, unknown>
}
interface ErrorBody {
  code: string
  data: Record<string, unknown>
}

const seriesIn = (tree: unknown): Series[] =>
  Array.isArray(tree) ? [tree as Series] : typeof tree === 'object' && tree !== null ? Object.values(tree).flatMap(seriesIn) : []

t.test('statistics of VMs, hosts and pools', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const vmPath = `/rest/v0/vms/${demo.runningVm}/stats`

  t.test('a running VM: the reference\'s names, one point every 5 s over 10 minutes by default', async (t) => {
    const { status, body } = await server.json<Stats>(vmPath)
    t.equal(status, 200)
    t.equal(body.interval, 5)
    t.equal(body.endTimestamp, Math.floor(server.clock.now / 1000 / 5) * 5)
    t.same(Object.keys(body.stats).sort(), ['cpus', 'iops', 'memory', 'memoryFree', 'memoryTarget', 'vifErrors', 'vifs', 'xvds'])
    t.same(Object.keys(body.stats['cpus'] as object), ['0', '1'], 'one series per vCPU')
    t.same(Object.keys(body.stats['xvds'] as object), ['r', 'w'])
    t.same(Object.keys((body.stats['xvds'] as Record<string, object>)['r'] as object), ['a'], 'disks by letter')
    t.same(Object.keys((body.stats['vifs'] as Record<string, object>)['rx'] as object), ['0'], 'interfaces by device')
    for (const series of seriesIn(body.stats)) t.equal(series.length, 120)
    const vm = (await server.json<{ memory: { size: number } }>(`/rest/v0/vms/${demo.runningVm}`)).body
    // RRDs keep five significant digits (the reference's example shows 2147500000 for 2 GiB).
    const size = Number(vm.memory.size.toPrecision(5))
    t.ok((body.stats['memory'] as Series).every((value) => value === size), 'memory is the VM\'s size')
    for (const cpu of Object.values(body.stats['cpus'] as Record<string, Series>)) t.ok(cpu.every((value) => value !== null && value >= 0 && value <= 100), 'CPU in percent')
    const free = body.stats['memoryFree'] as number[]
    t.ok(free.every((value) => value > 0 && value < vm.memory.size))
  })

  t.test('the same instant gives the same figures; a step later the window moves by one point', async (t) => {
    const first = (await server.json<Stats>(vmPath)).body
    t.same((await server.json<Stats>(vmPath)).body, first)
    server.clock.advance(5000)
    const next = (await server.json<Stats>(vmPath)).body
    t.equal(next.endTimestamp, first.endTimestamp + 5)
    const cpu = (stats: Stats): Series => (stats.stats['cpus'] as Record<string, Series>)['0'] as Series
    t.same(cpu(next).slice(0, 119), cpu(first).slice(1))
  })

  t.test('granularities', async (t) => {
    for (const [granularity, interval, points] of [['minutes', 60, 120], ['hours', 3600, 168], ['days', 86400, 366]] as const) {
      const { status, body } = await server.json<Stats>(`${vmPath}?granularity=${granularity}`)
      t.equal(status, 200)
      t.equal(body.interval, interval)
      t.equal(body.endTimestamp % interval, 0)
      const cpu = (body.stats['cpus'] as Record<string, Series>)['0'] as Series
      t.equal(cpu.length, points)
      // The VM started at some point of the last year: its RRD has nothing before.
      if (granularity === 'days') t.ok(cpu[0] === null && cpu[points - 1] !== null, 'null before the VM started')
    }
  })

  t.test('bad requests', async (t) => {
    const bad = await server.json<ErrorBody>(`${vmPath}?granularity=weeks`)
    t.equal(bad.status, 400)
    t.equal(bad.body.code, 'BAD_QUERY_PARAMETER')
    t.equal(bad.body.data['parameter'], 'granularity')
    const halted = await server.json<ErrorBody>(`/rest/v0/vms/${demo.haltedVm}/stats`)
    t.equal(halted.status, 422, 'a halted VM has no statistics, as the reference answers')
    t.equal(halted.body.code, 'INVALID_PARAMETERS')
    t.equal((await server.json<ErrorBody>('/rest/v0/vms/nope/stats')).status, 404)
    t.equal((await server.json<ErrorBody>(`/rest/v0/vms/${demo.master}/stats`)).status, 404, 'a host is no VM')
    t.equal((await server.json<ErrorBody>(`/rest/v0/hosts/${demo.runningVm}/stats`)).status, 404)
    t.equal((await server.json<ErrorBody>(`/rest/v0/pools/${demo.master}/stats`)).status, 404)
  })

  t.test('a host: its cores, interfaces and storage by the short uuid of each SR', async (t) => {
    const { status, body } = await server.json<Stats>(`/rest/v0/hosts/${demo.master}/stats?granularity=minutes`)
    t.equal(status, 200)
    t.equal(body.interval, 60)
    t.same(Object.keys(body.stats).sort(), ['cpus', 'ioThroughput', 'iops', 'iowait', 'latency', 'load', 'memory', 'memoryFree', 'pifs'])
    t.equal(Object.keys(body.stats['cpus'] as object).length, 32)
    t.same(Object.keys((body.stats['pifs'] as Record<string, object>)['rx'] as object), ['0', '1'])
    const srKeys = Object.keys((body.stats['iops'] as Record<string, object>)['r'] as object)
    t.ok(srKeys.length > 0 && srKeys.every((key) => /^[0-9a-f]{8}$/.test(key)))
    for (const series of seriesIn(body.stats)) t.equal(series.length, 120)
  })

  t.test('a pool: each host\'s statistics by host id', async (t) => {
    const { status, body } = await server.json<Record<string, Stats>>(`/rest/v0/pools/${demo.pool}/stats`)
    t.equal(status, 200)
    t.same(Object.keys(body).sort(), [demo.master, demo.host2, demo.host3].sort())
    t.same(body[demo.master], (await server.json<Stats>(`/rest/v0/hosts/${demo.master}/stats`)).body)
  })

  t.test('data sources: recorded ones appear in the statistics, forgotten ones leave them', async (t) => {
    const source = (name: string) => `/rest/v0/vms/${demo.runningVm}/stats/data_source/${name}`
    t.equal((await server.request(source('runstate_fullrun'), { method: 'PUT' })).status, 204)
    t.equal((await server.request(source('cpu_usage'), { method: 'PUT' })).status, 204)
    t.equal((await server.request(source('cpu0'), { method: 'DELETE' })).status, 204)
    const stats = (await server.json<Stats>(vmPath)).body.stats
    t.equal((stats['runstateFullrun'] as Series).length, 120)
    t.equal((stats['cpuUsage'] as Series).length, 120)
    t.same(Object.keys(stats['cpus'] as object), ['1'])

    const unknown = await server.json<ErrorBody>(source('vif_9_rx'), { method: 'PUT' })
    t.equal(unknown.status, 422)
    t.same(unknown.body.data['errors'], [{ path: 'data_source', message: 'is not a data source of this VM' }])
    const halted = await server.json<ErrorBody>(`/rest/v0/vms/${demo.haltedVm}/stats/data_source/cpu0`, { method: 'DELETE' })
    t.equal(halted.status, 409)
    t.equal(halted.body.code, 'INCORRECT_STATE')
    t.equal((await server.request('/rest/v0/vms/nope/stats/data_source/cpu0', { method: 'PUT' })).status, 404)

    const reader = await scopedUser(server, 'stats-reader@example.net', [{ resource: 'vm', action: 'read' }])
    t.equal((await server.request(vmPath, { auth: reader.auth })).status, 200, 'reading needs only vm read')
    const refused = await server.json<ErrorBody>(source('cpu0'), { method: 'PUT', auth: reader.auth })
    t.equal(refused.status, 403)
    t.equal(refused.body.code, 'NOT_ENOUGH_PRIVILEGES')
    t.same(Object.keys((await server.json<Stats>(vmPath)).body.stats['cpus'] as object), ['1'], 'nothing changed')
    t.equal((await server.request(`/rest/v0/hosts/${demo.master}/stats`, { auth: reader.auth })).status, 403)
  })
})

t.test('chosen data sources outlive a restart', async (t) => {
  const first = await startServer()
  const demo = await demoIds(first)
  t.equal((await first.request(`/rest/v0/vms/${demo.runningVm}/stats/data_source/runstate_blocked`, { method: 'PUT' })).status, 204)
  await first.close({ keepData: true })
  const second = await startServer({ dataDir: first.dataDir })
  t.teardown(() => second.close())
  const stats = (await second.json<Stats>(`/rest/v0/vms/${demo.runningVm}/stats`)).body.stats
  t.equal((stats['runstateBlocked'] as Series).length, 120)
})
