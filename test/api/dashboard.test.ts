import t from 'tap'
import { labUsage } from '../../src/driver/lab/usage.js'
import type { XoRecord } from '../../src/driver/types.js'
import { basic, jsonBody, startServer } from '../helpers/server.js'
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
