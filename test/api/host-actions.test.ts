import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedAuth } from '../helpers/scoped-user.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body
const act = (server: TestServer, path: string, body?: unknown, auth?: string) =>
  server.json<Obj>(`${path}?sync=true`, { method: 'POST', ...(body === undefined ? {} : jsonBody(body)), ...(auth === undefined ? {} : { auth }) })

const liveVmsOn = async (server: TestServer, hostId: string): Promise<string[]> =>
  (await server.json<Obj[]>('/rest/v0/vms?fields=id,$container,power_state')).body
    .filter((vm) => vm['$container'] === hostId && (vm['power_state'] === 'Running' || vm['power_state'] === 'Paused'))
    .map((vm) => String(vm['id']))

/** A host with a running VM on it. */
async function busyHost(server: TestServer, vmId: string): Promise<string> {
  return String((await get(server, `/rest/v0/vms/${vmId}`))['$container'])
}

t.test('restart_toolstack and scan_pifs keep the VMs running', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const host = await busyHost(server, demo.runningVm)
  const vms = await liveVmsOn(server, host)
  t.equal((await act(server, `/rest/v0/hosts/${host}/actions/restart_toolstack`)).status, 204)
  const after = await get(server, `/rest/v0/hosts/${host}`)
  t.match(after, { power_state: 'Running', agentStartTime: Number })
  t.same(await liveVmsOn(server, host), vms)
  t.equal((await act(server, `/rest/v0/hosts/${host}/actions/scan_pifs`)).status, 204)
  t.same((await get(server, `/rest/v0/hosts/${host}`))['PIFs'], after['PIFs'], 'no new PIF')
})

t.test('management_reconfigure moves the management flag to another PIF of the host', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const pifs = (await server.json<Obj[]>('/rest/v0/pifs?fields=id,$host,management,attached')).body.filter((pif) => pif['$host'] === demo.host2)
  const target = pifs.find((pif) => pif['management'] !== true && pif['attached'] === true)
  const foreign = (await server.json<Obj[]>('/rest/v0/pifs?fields=id,$host')).body.find((pif) => pif['$host'] === demo.host3)
  if (target === undefined || foreign === undefined) throw new Error('the demo lab has a second plugged PIF on xcp-ng-02 and PIFs on xcp-ng-03')
  const managementOf = async (): Promise<string[]> =>
    (await server.json<Obj[]>('/rest/v0/pifs?fields=id,$host,management')).body
      .filter((pif) => pif['$host'] === demo.host2 && pif['management'] === true)
      .map((pif) => String(pif['id']))
  const before = await managementOf()

  const path = `/rest/v0/hosts/${demo.host2}/actions/management_reconfigure`
  t.match(await act(server, path, { pif: 'nopif' }), { status: 404, body: { code: 'NO_SUCH_OBJECT', data: { id: 'nopif', type: 'PIF' } } })
  t.match(await act(server, path, {}), { status: 422, body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.pif' }] } } })
  t.match(await act(server, path, { pif: String(foreign['id']) }), { status: 422, body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.pif' }] } } })
  const auth = await scopedAuth(server, 'pifless@example.org', [{ resource: 'host', action: 'restart-toolstack' }, { resource: 'pif', action: 'read' }])
  t.match(await act(server, path, { pif: String(target['id']) }, auth), { status: 403 })
  t.same(await managementOf(), before, 'nothing changed')

  t.equal((await act(server, path, { pif: String(target['id']) })).status, 204)
  t.same(await managementOf(), [String(target['id'])])
})

t.test('emergency_shutdown powers off the VMs and the host; actions on a halted host are refused', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const host = await busyHost(server, demo.runningVm)
  const vms = await liveVmsOn(server, host)
  t.ok(vms.length > 0)

  const auth = await scopedAuth(server, 'noemergency@example.org', [{ resource: 'host', action: 'shutdown:clean' }])
  t.match(await act(server, `/rest/v0/hosts/${host}/actions/emergency_shutdown`, undefined, auth), { status: 403 })
  t.same(await liveVmsOn(server, host), vms, 'nothing changed')
  t.match(await act(server, '/rest/v0/hosts/nohost/actions/emergency_shutdown'), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, `/rest/v0/hosts/${host}/actions/emergency_shutdown`, { force: true }), {
    status: 422,
    body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.force' }] } },
  })

  t.equal((await act(server, `/rest/v0/hosts/${host}/actions/emergency_shutdown`)).status, 204)
  t.equal((await get(server, `/rest/v0/hosts/${host}`))['power_state'], 'Halted')
  for (const vm of vms) t.equal((await get(server, `/rest/v0/vms/${vm}`))['power_state'], 'Halted')

  for (const action of ['emergency_shutdown', 'smart_reboot', 'restart_toolstack', 'scan_pifs']) {
    t.match(await act(server, `/rest/v0/hosts/${host}/actions/${action}`), {
      status: 409,
      body: { code: 'INCORRECT_STATE', data: { object: host, property: 'power_state', actual: 'Halted', expected: 'Running' } },
    }, action)
  }
  t.equal((await get(server, `/rest/v0/hosts/${host}`))['power_state'], 'Halted')
})

t.test('smart_reboot suspends the VMs, reboots the host and resumes them on it', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const host = await busyHost(server, demo.runningVm)
  const vms = await liveVmsOn(server, host)
  const startTime = (await get(server, `/rest/v0/hosts/${host}`))['startTime']
  t.equal((await act(server, `/rest/v0/hosts/${host}/actions/smart_reboot`)).status, 204)
  const after = await get(server, `/rest/v0/hosts/${host}`)
  t.equal(after['power_state'], 'Running')
  t.ok(Number(after['startTime']) >= Number(startTime))
  t.same((await liveVmsOn(server, host)).sort(), [...vms].sort(), 'back on the same host')
  for (const vm of vms) t.equal((await get(server, `/rest/v0/vms/${vm}`))['power_state'], 'Running')
})
