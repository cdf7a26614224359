import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedAuth } from '../helpers/scoped-user.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const MiB = 2 ** 20
const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body
const act = (server: TestServer, path: string, body?: unknown, auth?: string) =>
  server.json<Obj>(`${path}?sync=true`, { method: 'POST', ...(body === undefined ? {} : jsonBody(body)), ...(auth === undefined ? {} : { auth }) })
const ids = async (server: TestServer, collection: string): Promise<string[]> => (await server.json<string[]>(`/rest/v0/${collection}`)).body.sort()
const folders = (server: TestServer): string[] => (existsSync(join(server.labDataDir, 'srs')) ? readdirSync(join(server.labDataDir, 'srs')).sort() : [])

const nfs = (hostId: string) => ({ hostId, name_label: 'More NFS', SR_type: 'nfs', device_config: { server: '10.0.0.9', serverpath: '/exports/more' } })

/** A disk with content on the SR, so that its file exists. */
async function diskWithContent(server: TestServer, srId: string): Promise<string> {
  const made = await server.json<{ id: string }>(`/rest/v0/srs/${srId}/vdis?raw=true&name_label=data`, { method: 'POST', body: Buffer.alloc(2 * MiB, 0xab) })
  if (made.status !== 201) throw new Error(`import: ${made.status} ${JSON.stringify(made.body)}`)
  return made.body.id
}

t.test('POST /srs: a shared SR with a plugged PBD on every host, its folder under the data directory', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const created = await server.json<{ id: string }>('/rest/v0/srs', jsonBody({ ...nfs(demo.master), name_description: 'second store', size: 4 * 2 ** 40 }))
  t.equal(created.status, 201)
  t.equal(created.response.headers.get('location'), `/rest/v0/srs/${created.body.id}`)
  const sr = await get(server, `/rest/v0/srs/${created.body.id}`)
  t.match(sr, { name_label: 'More NFS', name_description: 'second store', SR_type: 'nfs', content_type: 'user', shared: true, size: 4 * 2 ** 40, usage: 0, VDIs: [], $pool: demo.pool, $container: demo.pool })
  const pbds = sr['$PBDs'] as string[]
  t.equal(pbds.length, 3)
  const hosts = new Set<unknown>()
  for (const id of pbds) {
    const pbd = await get(server, `/rest/v0/pbds/${id}`)
    t.match(pbd, { attached: true, SR: created.body.id, device_config: { server: '10.0.0.9', serverpath: '/exports/more' } })
    hosts.add(pbd['host'])
    t.ok(((await get(server, `/rest/v0/hosts/${String(pbd['host'])}`))['$PBDs'] as string[]).includes(id), 'its host links it')
  }
  t.same([...hosts].sort(), [demo.master, demo.host2, demo.host3].sort())
  t.ok(folders(server).includes(created.body.id), 'the SR has its folder, named by its id')

  const local = await server.json<{ id: string }>('/rest/v0/srs', jsonBody({ hostId: demo.host2, name_label: 'Scratch', SR_type: 'ext', device_config: { device: '/dev/sdb' } }))
  t.equal(local.status, 201)
  t.match(await get(server, `/rest/v0/srs/${local.body.id}`), { shared: false, $container: demo.host2, allocationStrategy: 'thin', $PBDs: [/./] })
  t.equal(((await get(server, `/rest/v0/srs/${local.body.id}`))['$PBDs'] as string[]).length, 1)
})

t.test('POST /srs refuses a bad body, a missing or halted host, a caller without sr:create; nothing is made', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const before = { srs: await ids(server, 'srs'), pbds: await ids(server, 'pbds'), folders: folders(server) }
  const post = (body: unknown, auth?: string) => server.json<Obj>('/rest/v0/srs', { ...jsonBody(body), ...(auth === undefined ? {} : { auth }) })

  t.match(await post({ ...nfs(demo.master), SR_type: 'tape' }), { status: 422, body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.SR_type' }] } } })
  t.match(await post({ ...nfs(demo.master), device_config: { server: 'x', path: '/../../etc' } }), {
    status: 422,
    body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.device_config.path' }] } },
  })
  t.match(await post({ ...nfs(demo.master), content_type: 'iso' }), { status: 422, body: { data: { errors: [{ path: 'body.content_type' }] } } })
  t.match(await post({ name_label: 'x', SR_type: 'nfs', device_config: {} }), { status: 422, body: { code: 'INVALID_PARAMETERS' } })
  t.match(await post({ ...nfs(demo.master), size: -1 }), { status: 422, body: { code: 'INVALID_PARAMETERS' } })
  t.match(await post({ ...nfs(demo.master), extra: true }), { status: 422, body: { code: 'INVALID_PARAMETERS' } })
  t.match(await post(nfs('no-such-host')), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await post(nfs(demo.runningVm)), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  const reader = await scopedAuth(server, 'sr-reader@example.org', [{ resource: 'sr', action: 'read' }, { resource: 'host', action: 'read' }])
  t.match(await post(nfs(demo.master), reader), { status: 403, body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'sr', action: 'create' }] } } })

  t.equal((await act(server, `/rest/v0/hosts/${demo.host3}/actions/emergency_shutdown`)).status, 204)
  t.match(await post(nfs(demo.host3)), { status: 409, body: { code: 'INCORRECT_STATE', data: { object: demo.host3, property: 'power_state', actual: 'Halted' } } })

  t.same({ srs: await ids(server, 'srs'), pbds: await ids(server, 'pbds'), folders: folders(server) }, before, 'nothing changed')
})

t.test('forget removes the SR, its PBDs and disks from the pool; the folder and the disks\u2019 files stay', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const sr = (await server.json<{ id: string }>('/rest/v0/srs', jsonBody(nfs(demo.master)))).body.id
  const pbds = (await get(server, `/rest/v0/srs/${sr}`))['$PBDs'] as string[]
  const disk = await diskWithContent(server, sr)
  const file = join(server.labDataDir, 'srs', sr, `${disk}.vhd`)
  t.ok(existsSync(file))

  t.equal((await act(server, `/rest/v0/srs/${sr}/actions/forget`)).status, 204)
  t.equal((await server.request(`/rest/v0/srs/${sr}`)).status, 404)
  t.equal((await server.request(`/rest/v0/vdis/${disk}`)).status, 404)
  for (const pbd of pbds) t.equal((await server.request(`/rest/v0/pbds/${pbd}`)).status, 404)
  const master = await get(server, `/rest/v0/hosts/${demo.master}`)
  t.notOk((master['$PBDs'] as string[]).some((id) => pbds.includes(id)), 'no host links its PBDs')
  t.ok(existsSync(file), 'the disk\u2019s file is still on the storage')

  await server.close({ keepData: true })
  const again = await startServer({ dataDir: server.dataDir })
  t.teardown(async () => {
    await again.close()
    rmSync(server.dataDir, { recursive: true, force: true })
  })
  t.ok(existsSync(file), 'a restart does not collect the files of a forgotten SR')
})

t.test('DELETE /srs/:id destroys the SR, its disks (and the drives of halted VMs using them) and its folder', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const sr = (await server.json<{ id: string }>('/rest/v0/srs', jsonBody(nfs(demo.master)))).body.id
  const disk = await diskWithContent(server, sr)
  const vbd = await server.json<{ id: string }>('/rest/v0/vbds', jsonBody({ VM: demo.haltedVm, VDI: disk }))
  t.equal(vbd.status, 201)
  const response = await server.request(`/rest/v0/srs/${sr}`, { method: 'DELETE' })
  t.equal(response.status, 204)
  t.equal((await server.request(`/rest/v0/srs/${sr}`)).status, 404)
  t.equal((await server.request(`/rest/v0/vdis/${disk}`)).status, 404)
  t.equal((await server.request(`/rest/v0/vbds/${vbd.body.id}`)).status, 404)
  t.notOk(((await get(server, `/rest/v0/vms/${demo.haltedVm}`))['$VBDs'] as string[]).includes(vbd.body.id))
  t.notOk(folders(server).includes(sr), 'its folder is gone')
})

t.test('DELETE and forget refuse an SR whose disks a live VM uses, a missing SR, a caller without the privilege; nothing changes', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const before = { srs: await ids(server, 'srs'), vdis: await ids(server, 'vdis'), pbds: await ids(server, 'pbds') }
  const sr = await get(server, `/rest/v0/srs/${demo.defaultSr}`)

  const deleted = await server.json<Obj>(`/rest/v0/srs/${demo.defaultSr}`, { method: 'DELETE' })
  t.match(deleted, { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'power_state', expected: 'Halted' } } })
  t.match(await act(server, `/rest/v0/srs/${demo.defaultSr}/actions/forget`), { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'power_state' } } })
  t.match(await server.json('/rest/v0/srs/no-such-sr', { method: 'DELETE' }), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, '/rest/v0/srs/no-such-sr/actions/forget'), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, `/rest/v0/srs/${demo.defaultSr}/actions/forget`, { keepFiles: true }), { status: 422, body: { data: { errors: [{ path: 'body.keepFiles' }] } } })
  const scanner = await scopedAuth(server, 'sr-scanner@example.org', [{ resource: 'sr', action: 'read' }, { resource: 'sr', action: 'scan' }])
  t.match(await server.json(`/rest/v0/srs/${demo.defaultSr}`, { method: 'DELETE', auth: scanner }), {
    status: 403,
    body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'sr', action: 'delete' }] } },
  })
  t.match(await act(server, `/rest/v0/srs/${demo.defaultSr}/actions/forget`, undefined, scanner), {
    status: 403,
    body: { data: { missingPrivileges: [{ resource: 'sr', action: 'forget' }] } },
  })
  t.same({ srs: await ids(server, 'srs'), vdis: await ids(server, 'vdis'), pbds: await ids(server, 'pbds') }, before, 'nothing changed')
  t.same(await get(server, `/rest/v0/srs/${demo.defaultSr}`), sr)
})

t.test('PBD unplug makes the SR unusable on that host until plug; refused while a live VM there uses it', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const sr = (await server.json<{ id: string }>('/rest/v0/srs', jsonBody(nfs(demo.master)))).body.id
  const disk = (await server.json<{ id: string }>('/rest/v0/vdis', jsonBody({ srId: sr, name_label: 'extra', virtual_size: 2 * MiB }))).body.id
  t.equal((await server.json('/rest/v0/vbds', jsonBody({ VM: demo.haltedVm, VDI: disk }))).status, 201)
  const pbds = await Promise.all(((await get(server, `/rest/v0/srs/${sr}`))['$PBDs'] as string[]).map((id) => get(server, `/rest/v0/pbds/${id}`)))
  const onMaster = String(pbds.find((pbd) => pbd['host'] === demo.master)?.['id'])

  t.equal((await act(server, `/rest/v0/pbds/${onMaster}/actions/unplug`)).status, 204)
  t.match(await get(server, `/rest/v0/pbds/${onMaster}`), { attached: false })
  t.match(await act(server, `/rest/v0/vms/${demo.haltedVm}/actions/start`, { hostId: demo.master }), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { object: onMaster, property: 'attached', actual: false, expected: true } },
  })
  t.match(await get(server, `/rest/v0/vms/${demo.haltedVm}`), { power_state: 'Halted' })
  t.match(await act(server, `/rest/v0/pbds/${onMaster}/actions/unplug`), { status: 409, body: { code: 'INCORRECT_STATE', data: { object: onMaster, property: 'attached', actual: false } } })

  t.equal((await act(server, `/rest/v0/pbds/${onMaster}/actions/plug`)).status, 204)
  t.match(await get(server, `/rest/v0/pbds/${onMaster}`), { attached: true })
  t.equal((await act(server, `/rest/v0/vms/${demo.haltedVm}/actions/start`, { hostId: demo.master })).status, 204)
  t.match(await act(server, `/rest/v0/pbds/${onMaster}/actions/unplug`), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { object: demo.haltedVm, property: 'power_state', actual: 'Running', expected: 'Halted' } },
  })
  t.match(await act(server, `/rest/v0/pbds/${onMaster}/actions/plug`), { status: 409, body: { data: { object: onMaster, property: 'attached', actual: true } } })
  t.match(await act(server, '/rest/v0/pbds/no-such-pbd/actions/unplug'), { status: 404, body: { code: 'NO_SUCH_OBJECT' } })
  t.match(await act(server, `/rest/v0/pbds/${onMaster}/actions/unplug`, { force: true }), { status: 422, body: { data: { errors: [{ path: 'body.force' }] } } })
  const reader = await scopedAuth(server, 'pbd-reader@example.org', [{ resource: 'pbd', action: 'read' }, { resource: 'pbd', action: 'plug' }])
  t.match(await act(server, `/rest/v0/pbds/${onMaster}/actions/unplug`, undefined, reader), {
    status: 403,
    body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'pbd', action: 'unplug' }] } },
  })
  t.match(await get(server, `/rest/v0/pbds/${onMaster}`), { attached: true }, 'the refusals changed nothing')
})

t.test('a disk of an SR plugged nowhere cannot move', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const sr = (await server.json<{ id: string }>('/rest/v0/srs', jsonBody(nfs(demo.master)))).body.id
  const disk = (await server.json<{ id: string }>('/rest/v0/vdis', jsonBody({ srId: sr, name_label: 'stuck', virtual_size: 2 * MiB }))).body.id
  for (const pbd of (await get(server, `/rest/v0/srs/${sr}`))['$PBDs'] as string[]) t.equal((await act(server, `/rest/v0/pbds/${pbd}/actions/unplug`)).status, 204)
  t.match(await act(server, `/rest/v0/vdis/${disk}/actions/migrate`, { srId: demo.defaultSr }), {
    status: 409,
    body: { code: 'INCORRECT_STATE', data: { property: 'attached', actual: false, expected: true } },
  })
  t.match(await get(server, `/rest/v0/vdis/${disk}`), { $SR: sr }, 'the disk stayed')
})
