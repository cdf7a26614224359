import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedUser } from '../helpers/scoped-user.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { ndjsonValues } from '../helpers/streams.js'

// Issue 31: the site dashboard and the stats are shared between requests. The test clock never moves
// unless a case says so: every read below falls in the same second, so only a change can refresh them.

type Obj = Record<string, unknown>
interface VmsStatus {
  active: number
  inactive: number
  running: number
  halted: number
  total: number
}
interface Dashboard {
  nPools: number
  nHosts: number
  hostsStatus: { disabled: number; running: number; halted: number; total: number }
  vmsStatus: VmsStatus
}

const act = async (server: TestServer, path: string): Promise<void> => {
  const { status, body } = await server.json(`${path}?sync=true`, { method: 'POST' })
  if (status >= 300) throw new Error(`${path}: ${status} ${JSON.stringify(body)}`)
}

const dashboardOf = async (server: TestServer, auth?: string): Promise<{ body: Dashboard; text: string }> => {
  const response = await server.request('/rest/v0/dashboard', auth === undefined ? {} : { auth })
  if (response.status !== 200) throw new Error(`GET /rest/v0/dashboard: ${response.status}`)
  const text = await response.text()
  return { body: JSON.parse(text) as Dashboard, text }
}

/** A role of its own holding these read privileges, given to the user. */
async function grant(server: TestServer, userId: string, resource: string, selector?: string): Promise<void> {
  const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: `${userId} ${resource}` }))
  const made = await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: role.body.id, effect: 'allow', resource, action: 'read', ...(selector === undefined ? {} : { selector }) }))
  if (made.status !== 201) throw new Error(`grant ${resource}: ${made.status}`)
  const given = await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${userId}`, { method: 'PUT' })
  if (given.status !== 204) throw new Error(`grant ${resource}: ${given.status}`)
}

t.test('the site dashboard shows a change at once, in both forms', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const before = await dashboardOf(server)
  t.same(before.body.vmsStatus, { active: 8, inactive: 4, running: 7, halted: 3, paused: 1, suspended: 1, unknown: 0, total: 12 })

  await act(server, `/rest/v0/vms/${demo.runningVm}/actions/clean_shutdown`)
  const stopped = await dashboardOf(server)
  t.same(stopped.body.vmsStatus, { ...before.body.vmsStatus, active: 7, inactive: 5, running: 6, halted: 4 }, 'a VM stopped')
  const lines = await ndjsonValues<Obj>(await server.request('/rest/v0/dashboard?ndjson=true'))
  t.same(lines, Object.entries(stopped.body).map(([section, value]) => ({ [section]: value })), 'the NDJSON form, as current')

  await act(server, `/rest/v0/vms/${demo.runningVm}/actions/start`)
  t.equal((await dashboardOf(server)).text, before.text, 'started again: the same bytes as before')

  await act(server, `/rest/v0/hosts/${demo.host3}/actions/disable`)
  t.same((await dashboardOf(server)).body.hostsStatus, { disabled: 1, running: 2, halted: 0, unknown: 0, total: 3 }, 'a host disabled')

  const bad = await server.json<{ code: string; data: Obj }>('/rest/v0/dashboard?ndjson=maybe')
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'BAD_QUERY_PARAMETER')
  t.equal(bad.body.data['parameter'], 'ndjson')
  t.same((await dashboardOf(server)).body.hostsStatus, { disabled: 1, running: 2, halted: 0, unknown: 0, total: 3 }, 'nothing changed')
})

t.test('each audience its own site dashboard, however they interleave', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const prodCount = async (): Promise<number> => (await server.json<unknown[]>('/rest/v0/vms?filter=tags:prod')).body.length
  const prod = await scopedUser(server, 'prod@example.net', [{ resource: 'vm', action: 'read', selector: 'tags:prod' }])
  const prodTwin = await scopedUser(server, 'prod-twin@example.net', [{ resource: 'vm', action: 'read', selector: 'tags:prod' }])
  const allVms = await scopedUser(server, 'all-vms@example.net', [{ resource: 'vm', action: 'read' }])
  const none = await scopedUser(server, 'none@example.net', [{ resource: 'vm', action: 'read', selector: 'tags:nothing-has-this' }])

  const admin = await dashboardOf(server)
  const prodView = await dashboardOf(server, prod.auth)
  const allView = await dashboardOf(server, allVms.auth)
  const noneView = await dashboardOf(server, none.auth)
  const twinView = await dashboardOf(server, prodTwin.auth)
  t.equal(admin.body.vmsStatus.total, 12)
  t.equal(admin.body.nHosts, 3)
  t.equal(prodView.body.vmsStatus.total, await prodCount())
  t.ok(prodView.body.vmsStatus.total > 0 && prodView.body.vmsStatus.total < 12)
  t.same([prodView.body.nPools, prodView.body.nHosts], [0, 0], 'no pool nor host to a VM reader')
  t.equal(allView.body.vmsStatus.total, 12)
  t.equal(allView.body.nHosts, 0)
  t.equal(noneView.body.vmsStatus.total, 0)
  t.equal(twinView.text, prodView.text, 'the same privileges, the same dashboard')
  t.equal((await dashboardOf(server, none.auth)).body.vmsStatus.total, 0, 'asked again after the others: still nothing')

  const untagged = (await server.json<string[]>('/rest/v0/vms?filter=!tags:prod')).body[0]?.replace(/^.*\//, '')
  t.equal((await server.request(`/rest/v0/vms/${untagged}/tags/prod`, { method: 'PUT' })).status, 204)
  t.equal((await dashboardOf(server, prod.auth)).body.vmsStatus.total, prodView.body.vmsStatus.total + 1, 'a VM tagged prod counts for its readers at once')
  t.equal((await dashboardOf(server, none.auth)).body.vmsStatus.total, 0, 'and for no one else')
  t.equal((await dashboardOf(server)).body.vmsStatus.total, 12)

  await grant(server, none.id, 'host')
  const widened = await dashboardOf(server, none.auth)
  t.same([widened.body.nHosts, widened.body.vmsStatus.total], [3, 0], 'a privilege granted shows at once')
  t.equal((await dashboardOf(server, prod.auth)).body.nHosts, 0, 'to its holder only')
  t.equal((await server.request('/rest/v0/dashboard', { auth: null })).status, 401)
})

t.test('a pool\'s stats: its hosts\' bodies side by side, current', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const text = async (path: string): Promise<string> => {
    const response = await server.request(path)
    t.equal(response.status, 200, path)
    return response.text()
  }
  const poolPath = `/rest/v0/pools/${demo.pool}/stats`
  const first = await text(poolPath)
  // In the driver's order of the hosts, as the route walks them.
  const hosts = Object.keys(JSON.parse(first) as Obj)
  t.same([...hosts].sort(), [demo.master, demo.host2, demo.host3].sort())
  const joined = async (granularity: string): Promise<string> => {
    const parts = await Promise.all(hosts.map(async (id) => `${JSON.stringify(id)}:${await text(`/rest/v0/hosts/${id}/stats?granularity=${granularity}`)}`))
    return `{${parts.join(',')}}`
  }
  t.equal(first, await joined('seconds'), 'the bytes of each host\'s own answer')
  t.equal(await text(`${poolPath}?granularity=hours`), await joined('hours'))

  server.clock.advance(5000)
  const next = JSON.parse(await text(poolPath)) as Record<string, { endTimestamp: number }>
  const previous = JSON.parse(first) as Record<string, { endTimestamp: number }>
  for (const id of hosts) t.equal(next[id]?.endTimestamp, (previous[id]?.endTimestamp ?? 0) + 5, 'a step later, the window has moved')

  t.equal((await server.json(`/rest/v0/hosts/${demo.host3}/actions/emergency_shutdown?sync=true`, { method: 'POST' })).status, 204)
  const halted = JSON.parse(await text(poolPath)) as Record<string, Obj>
  t.same(halted[demo.host3], { error: { code: 'INCORRECT_STATE', message: `host ${demo.host3} is not running` } }, 'a host halted answers its error in its place')
  t.same(Object.keys(halted), hosts)
  t.equal((await dashboardOf(server)).body.hostsStatus.halted, 1, 'and the site dashboard counts it halted')
})
