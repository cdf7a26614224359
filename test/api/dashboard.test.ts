import t from 'tap'
import { poolDashboard } from '../../src/api/dashboard.js'
import { PoolMembersIndex } from '../../src/api/pool-members.js'
import { labUsage } from '../../src/driver/lab/usage.js'
import type { XoRecord } from '../../src/driver/types.js'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startLabServer, startServer, type TestServer } from '../helpers/server.js'
import { ndjsonValues } from '../helpers/streams.js'

interface Top {
  id: string
  name_label: string
  percent: number
}

interface Dashboard {
  hosts: {
    status: { running: number; disabled: number; halted: number; total: number }
    topFiveUsage: { ram: Array<Top & { size: number; usage: number }>; cpu: Top[] }
    missingPatches: { hasAuthorization: boolean }
  }
  vms: {
    status: { running: number; halted: number; paused: number; suspended: number; total: number }
    topFiveUsage: { cpu: Top[]; ram: Array<Top & { memory: number; memoryFree: number }> }
  }
  srs: { topFiveUsage: Array<Top & { physical_usage: number; size: number }> }
  alarms: string[]
  cpuProvisioning: { total: number; assigned: number; percent: number }
}

const descending = (items: Top[]): boolean => items.every((item, i) => i === 0 || (items[i - 1] as Top).percent >= item.percent)

t.test('GET /rest/v0/pools/:id/dashboard', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const [pool] = (await server.json<Array<{ id: string }>>('/rest/v0/pools?fields=id')).body
  const path = `/rest/v0/pools/${pool?.id}/dashboard`

  t.test('shape and figures of the demo pool', async (t) => {
    const { status, body } = await server.json<Dashboard>(path)
    t.equal(status, 200)
    t.same(Object.keys(body).sort(), ['alarms', 'cpuProvisioning', 'hosts', 'srs', 'vms'])
    t.same(body.hosts.status, { running: 3, disabled: 0, halted: 0, total: 3 })
    t.same(body.vms.status, { running: 7, halted: 3, paused: 1, suspended: 1, total: 12 })
    t.same(body.hosts.missingPatches, { hasAuthorization: false })

    const hosts = (await server.json<Array<{ id: string; memory: { size: number } }>>('/rest/v0/hosts?fields=id,memory')).body
    t.equal(body.hosts.topFiveUsage.ram.length, 3)
    t.equal(body.hosts.topFiveUsage.cpu.length, 3)
    t.ok(descending(body.hosts.topFiveUsage.ram) && descending(body.hosts.topFiveUsage.cpu), 'sorted, highest first')
    for (const host of body.hosts.topFiveUsage.ram) {
      t.equal(host.size, hosts.find((h) => h.id === host.id)?.memory.size)
      t.ok(host.usage > 0 && host.usage <= host.size)
      t.equal(host.percent, (host.usage / host.size) * 100)
    }
    for (const host of body.hosts.topFiveUsage.cpu) t.ok(host.percent > 0 && host.percent < 100)

    t.equal(body.vms.topFiveUsage.cpu.length, 5, 'top five of the 8 running or paused VMs')
    t.ok(descending(body.vms.topFiveUsage.cpu) && descending(body.vms.topFiveUsage.ram))
    for (const vm of body.vms.topFiveUsage.ram) {
      t.ok(vm.memoryFree >= 0 && vm.memoryFree < vm.memory)
      t.ok(Math.abs(vm.percent - ((vm.memory - vm.memoryFree) / vm.memory) * 100) < 1e-6)
    }

    const srs = (await server.json<Array<{ id: string; content_type: string }>>('/rest/v0/srs?fields=id,content_type')).body
    t.equal(body.srs.topFiveUsage.length, srs.filter((sr) => sr.content_type !== 'iso').length, 'ISO libraries are left out')
    t.ok(descending(body.srs.topFiveUsage))
    for (const sr of body.srs.topFiveUsage) t.equal(sr.percent, (sr.physical_usage / sr.size) * 100)

    const alarms = (await server.json<Array<{ id: string; $pool: string }>>('/rest/v0/alarms?fields=id,$pool')).body
    t.same(body.alarms, alarms.filter((alarm) => alarm.$pool === pool?.id).map((alarm) => alarm.id))
    t.equal(body.alarms.length, 3)

    const vms = (await server.json<Array<{ power_state: string; CPUs: { number: number } }>>('/rest/v0/vms?fields=power_state,CPUs')).body
    const assigned = vms.filter((vm) => vm.power_state === 'Running').reduce((sum, vm) => sum + vm.CPUs.number, 0)
    t.same(body.cpuProvisioning, { total: 80, assigned, percent: (assigned * 100) / 80 })
  })

  t.test('the NDJSON form: one line per section, nested under its path', async (t) => {
    const whole = (await server.json<Dashboard>(path)).body
    const response = await server.request(`${path}?ndjson=true`)
    t.equal(response.status, 200)
    t.match(response.headers.get('content-type'), /application\/x-ndjson/)
    const lines = await ndjsonValues<Record<string, unknown>>(response)
    t.equal(lines.length, 9)
    t.same(lines[0], { hosts: { status: whole.hosts.status } })
    t.same(lines[5], { hosts: { topFiveUsage: { ram: whole.hosts.topFiveUsage.ram } } })
  })

  t.test('figures are deterministic, and drift slowly as time passes', async (t) => {
    const first = (await server.json<Dashboard>(path)).body
    t.same((await server.json<Dashboard>(path)).body, first, 'same instant, same figures')
    server.clock.advance(1000)
    const second = (await server.json<Dashboard>(path)).body
    const cpuOf = (dashboard: Dashboard, id: string): number | undefined => dashboard.hosts.topFiveUsage.cpu.find((host) => host.id === id)?.percent
    for (const host of first.hosts.topFiveUsage.cpu) {
      const delta = Math.abs((cpuOf(second, host.id) ?? NaN) - host.percent)
      t.ok(delta < 0.5, `${host.name_label} moved ${delta.toFixed(3)} points in one second`)
    }
    server.clock.advance(20 * 60_000)
    const later = (await server.json<Dashboard>(path)).body
    t.ok(
      first.hosts.topFiveUsage.cpu.some((host) => Math.abs((cpuOf(later, host.id) ?? NaN) - host.percent) > 1),
      'twenty minutes later the figures have moved',
    )
    t.same(later.hosts.status, first.hosts.status, 'counts do not move with time')
  })

  t.test('a missing pool is a 404 naming it', async (t) => {
    const { status, body } = await server.json('/rest/v0/pools/no-such-pool/dashboard')
    t.equal(status, 404)
    t.same(body, { error: 'no such pool no-such-pool', code: 'NO_SUCH_OBJECT', data: { id: 'no-such-pool', type: 'pool' } })
    const [host] = (await server.json<Array<{ id: string }>>('/rest/v0/hosts?fields=id')).body
    t.equal((await server.json(`/rest/v0/pools/${host?.id}/dashboard`)).status, 404, 'an id of another type is no pool')
  })

  t.test('credentials and privileges', async (t) => {
    t.equal((await server.json(path, { auth: null })).status, 401)
    const created = await server.json('/rest/v0/users', jsonBody({ email: 'viewer@example.net', password: 'viewer-password-1' }))
    t.equal(created.status, 201)
    const { status, body } = await server.json(path, { auth: basic('viewer@example.net', 'viewer-password-1') })
    t.equal(status, 403)
    t.match(body, { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'pool', action: 'read' }] } })
  })

  t.test('the route is in the OpenAPI document', async (t) => {
    const { body } = await server.json<{ paths: Record<string, { get?: { operationId?: string } }> }>('/rest/v0/docs/swagger.json')
    t.equal(body.paths['/rest/v0/pools/{id}/dashboard']?.get?.operationId, 'get-pool-dashboard')
  })
})

t.test('the dashboard kept from changes equals one computed afresh, change after change', async (t) => {
  // The lab raises an alarm as a pool would.
  const { server, lab } = await startLabServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const path = `/rest/v0/pools/${demo.pool}/dashboard`
  const { driver } = server.app

  /** A new index reads every record of the driver: the full recomputation the kept one must equal. */
  const fresh = (): unknown => {
    const index = new PoolMembersIndex(driver)
    try {
      return poolDashboard(index.of(demo.pool), driver.getObject(demo.pool) as XoRecord, driver, server.clock.read())
    } finally {
      index.close()
    }
  }
  /** Counts straight from the listing, as a client would make them. */
  const listed = async (): Promise<{ status: Dashboard['vms']['status']; assigned: number }> => {
    const vms = (await server.json<Array<{ power_state: string; CPUs: { number: number } }>>(`/rest/v0/vms?fields=power_state,CPUs&filter=${encodeURIComponent(`$pool:${demo.pool}`)}`)).body
    const count = (state: string): number => vms.filter((vm) => vm.power_state === state).length
    return {
      status: { running: count('Running'), halted: count('Halted'), paused: count('Paused'), suspended: count('Suspended'), total: vms.length },
      assigned: vms.filter((vm) => vm.power_state === 'Running').reduce((sum, vm) => sum + vm.CPUs.number, 0),
    }
  }
  const check = async (step: string): Promise<Dashboard> => {
    const { status, body } = await server.json<Dashboard>(path)
    t.equal(status, 200, step)
    t.same(body, fresh(), `${step}: equal to a full recomputation`)
    const counts = await listed()
    t.same(body.vms.status, counts.status, `${step}: VM counts as listed`)
    t.equal(body.cpuProvisioning.assigned, counts.assigned, `${step}: vCPUs of running VMs as listed`)
    return body
  }
  const act = async (server: TestServer, action: string, body?: unknown): Promise<Record<string, unknown>> => {
    const { status, body: answer } = await server.json<Record<string, unknown>>(`${action}?sync=true`, body === undefined ? { method: 'POST' } : jsonBody(body))
    if (status >= 300) throw new Error(`${action}: ${status}`)
    return answer
  }

  const before = await check('at start')
  await act(server, `/rest/v0/vms/${demo.haltedVm}/actions/start`)
  const started = await check('a VM started')
  t.equal(started.vms.status.running, before.vms.status.running + 1)
  await act(server, `/rest/v0/vms/${demo.runningVm}/actions/clean_shutdown`)
  await check('a VM stopped')
  await act(server, `/rest/v0/vms/${demo.pausedVm}/actions/unpause`)
  await check('a VM unpaused')
  const network = (await server.json<Array<{ id: string }>>('/rest/v0/networks?fields=id')).body[0]?.id
  const created = await act(server, `/rest/v0/pools/${demo.pool}/actions/create_vm`, {
    name_label: 'counted',
    template: demo.template,
    vdis: [{ name_label: 'root', size: 1024 ** 3, sr: demo.defaultSr }],
    vifs: [{ network }],
    boot: true,
  })
  const grown = await check('a VM created and booted')
  t.equal(grown.vms.status.total, before.vms.status.total + 1)

  const alarmCount = grown.alarms.length
  const vmAlarm = { metric: 'cpu_usage', value: 0.99, level: 0.9 }
  const message = {
    id: 'a-new-alarm',
    type: 'message',
    uuid: 'a-new-alarm',
    $pool: demo.pool,
    name: 'ALARM',
    body: `value: ${vmAlarm.value}\nconfig:\n<variable>\n\t<name value="${vmAlarm.metric}"/>\n</variable>\n`,
    time: 1,
    $object: String(created['id']),
  }
  lab.applyChanges([{ kind: 'add', object: message }])
  await driver.settled()
  const raised = await check('an alarm raised')
  t.equal(raised.alarms.length, alarmCount + 1)
  t.ok(raised.alarms.includes('a-new-alarm'))

  t.equal((await server.request(`/rest/v0/vms/${String(created['id'])}`, { method: 'DELETE' })).status < 300, true, 'the new VM destroyed')
  const shrunk = await check('a VM destroyed, its alarm with it')
  t.equal(shrunk.vms.status.total, before.vms.status.total)
  t.notOk(shrunk.alarms.includes('a-new-alarm'))
  await act(server, `/rest/v0/hosts/${demo.host3}/actions/disable`)
  const disabled = await check('a host disabled')
  t.equal(disabled.hosts.status.disabled, 1)
  server.clock.advance(30 * 60_000)
  await check('half an hour later')
})

t.test('labUsage', async (t) => {
  const host = (state: string): XoRecord => ({ id: 'h1', type: 'host', power_state: state, memory: { size: 1000, usage: 400 } })
  const vm = (state: string, usage?: number): XoRecord => ({
    id: 'v1',
    type: 'VM',
    power_state: state,
    memory: { size: 1000, ...(usage === undefined ? {} : { usage }) },
  })
  const now = Date.UTC(2026, 10, 22)

  t.same(labUsage(host('Halted'), now), { cpu: 0, memory: 0 }, 'a halted host uses nothing')
  t.same(labUsage(vm('Halted'), now), { cpu: 0, memory: 0 }, 'a halted VM uses nothing')
  t.same(labUsage(vm('Suspended'), now), { cpu: 0, memory: 0 }, 'a suspended VM uses nothing on its host')
  t.same(labUsage(vm('Paused', 600), now), { cpu: 0, memory: 600 }, 'a paused VM keeps its memory and uses no CPU')
  t.same(labUsage(vm('Paused', 600), now + 3_600_000), labUsage(vm('Paused', 600), now), 'and is frozen')
  t.same(labUsage({ id: 's', type: 'SR' }, now), { cpu: 0 }, 'objects without CPUs')

  const running = labUsage(host('Running'), now)
  t.same(labUsage(host('Running'), now), running, 'a pure function of the record and the time')
  t.ok(running.cpu > 0 && running.cpu < 1)
  t.ok(running.memory !== undefined && running.memory >= 400 && running.memory <= 420, 'host memory: its allocation plus a little overhead')
  t.not(labUsage({ ...host('Running'), id: 'h2' }, now).cpu, running.cpu, 'each object has its own figures')

  const start = labUsage(vm('Running'), now)
  let previous = start
  let largestStep = 0
  let moved = 0
  let memoryInRange = true
  for (let minute = 1; minute <= 240; minute++) {
    const next = labUsage(vm('Running'), now + minute * 60_000)
    largestStep = Math.max(largestStep, Math.abs(next.cpu - previous.cpu))
    moved = Math.max(moved, Math.abs(next.cpu - start.cpu))
    memoryInRange &&= next.memory !== undefined && next.memory >= 0 && next.memory <= 1000
    previous = next
  }
  t.ok(largestStep < 0.1, `no jumps from one minute to the next (largest ${largestStep.toFixed(3)})`)
  t.ok(memoryInRange, 'guest memory stays within the VM size')
  t.ok(moved > 0.05, 'over hours the CPU figure wanders')
})
