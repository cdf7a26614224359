import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedAuth } from '../helpers/scoped-user.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body
const act = (server: TestServer, path: string, body?: unknown, auth?: string) =>
  server.json<Obj>(`${path}?sync=true`, { method: 'POST', ...(body === undefined ? {} : jsonBody(body)), ...(auth === undefined ? {} : { auth }) })

/** Empties a member host: its VMs and the disks of its local SR are destroyed. */
async function emptyHost(server: TestServer, hostId: string): Promise<void> {
  await act(server, `/rest/v0/hosts/${hostId}/actions/emergency_shutdown`)
  const vms = (await server.json<Obj[]>('/rest/v0/vms?fields=id,$container')).body.filter((vm) => vm['$container'] === hostId)
  for (const vm of vms) await server.request(`/rest/v0/vms/${String(vm['id'])}`, { method: 'DELETE' })
  const local = (await server.json<Obj[]>('/rest/v0/srs?fields=id,$container,VDIs')).body.find((sr) => sr['$container'] === hostId)
  for (const vdi of (local?.['VDIs'] as string[] | undefined) ?? []) await server.request(`/rest/v0/vdis/${vdi}`, { method: 'DELETE' })
}

t.test('forget and detach refuse the master, a host holding VMs or disks, a missing host, a bad body, a caller without the privilege', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const hosts = async (): Promise<string[]> => (await server.json<string[]>('/rest/v0/hosts')).body.sort()
  const before = await hosts()

  t.match(await act(server, `/rest/v0/hosts/${demo.master}/actions/detach`), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { object: demo.master, property: 'master', actual: true, expected: false } },
  })
  t.match(await act(server, `/rest/v0/hosts/${demo.host3}/actions/detach`), { status: 409, body: { code: 'INCORRECT_STATE', data: { property: '$container', actual: demo.host3 } } })
  t.match(await act(server, `/rest/v0/hosts/${demo.host3}/actions/forget`), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { object: demo.host3, property: 'power_state', actual: 'Running', expected: 'Halted' } },
  })
  t.match(await act(server, '/rest/v0/hosts/nohost/actions/forget'), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, `/rest/v0/hosts/${demo.host3}/actions/detach`, { force: true }), {
    status: 422,
    body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.force' }] } },
  })
  const auth = await scopedAuth(server, 'nodetach@example.org', [{ resource: 'host', action: 'disable' }])
  await emptyHost(server, demo.host3)
  t.match(await act(server, `/rest/v0/hosts/${demo.host3}/actions/forget`, undefined, auth), { status: 403 })
  t.same(await hosts(), before, 'nothing changed')
})

t.test('forget removes a halted, empty member host with its PIFs, PBDs and local SR', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const host = await get(server, `/rest/v0/hosts/${demo.host3}`)
  await emptyHost(server, demo.host3)
  t.equal((await act(server, `/rest/v0/hosts/${demo.host3}/actions/forget`)).status, 204)
  t.equal((await server.request(`/rest/v0/hosts/${demo.host3}`)).status, 404)
  for (const pif of host['PIFs'] as string[]) t.equal((await server.request(`/rest/v0/pifs/${pif}`)).status, 404)
  for (const pbd of host['$PBDs'] as string[]) t.equal((await server.request(`/rest/v0/pbds/${pbd}`)).status, 404)
  const srs = (await server.json<Obj[]>('/rest/v0/srs?fields=id,$container,$PBDs')).body
  t.notOk(srs.some((sr) => sr['$container'] === demo.host3), 'its local SR went with it')
  t.notOk(srs.some((sr) => (sr['$PBDs'] as string[]).some((pbd) => (host['$PBDs'] as string[]).includes(pbd))), 'no SR links its PBDs')
  const networks = (await server.json<Obj[]>('/rest/v0/networks?fields=PIFs')).body
  t.notOk(networks.some((n) => (n['PIFs'] as string[]).some((pif) => (host['PIFs'] as string[]).includes(pif))), 'no network links its PIFs')
  t.equal((await get(server, `/rest/v0/hosts/${demo.host2}`))['power_state'], 'Running', 'the others stay')
})

t.test('detach ejects a running, empty member host', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  await emptyHost(server, demo.host3)
  t.equal((await act(server, `/rest/v0/hosts/${demo.host3}/actions/start`)).status, 204)
  t.equal((await act(server, `/rest/v0/hosts/${demo.host3}/actions/detach`)).status, 204)
  t.equal((await server.request(`/rest/v0/hosts/${demo.host3}`)).status, 404)
  t.notOk((await server.json<string[]>('/rest/v0/hosts')).body.includes(demo.host3))
})
