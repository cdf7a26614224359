import t from 'tap'
import { rmSync } from 'node:fs'
import type { ObjectChange } from '../../src/driver/types.js'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>
const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body

t.test('PATCH, DELETE and tags', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())
  const vmPath = `/rest/v0/vms/${demo.haltedVm}`

  t.test('PATCH applies the given fields and emits a change event', async (t) => {
    const listing = `/rest/v0/vms?fields=name_label&filter=id:${demo.haltedVm}`
    t.same((await server.json<Obj[]>(listing)).body.map((vm) => vm['name_label']), ['staging-app'])
    const changes: ObjectChange[] = []
    const unsubscribe = server.app.bus.subscribe((change) => changes.push(change))
    const response = await server.request(vmPath, jsonBody({ nameLabel: 'renamed', nameDescription: 'new text', cpus: 2, autoPoweron: true }, 'PATCH'))
    unsubscribe()
    t.equal(response.status, 204)
    const vm = await get(server, vmPath)
    t.equal(vm['name_label'], 'renamed')
    t.equal(vm['name_description'], 'new text')
    t.equal((vm['CPUs'] as Obj)['number'], 2)
    t.equal(vm['auto_poweron'], true)
    t.ok(changes.some((change) => change.kind === 'update' && change.object.id === demo.haltedVm))
    t.same((await server.json<Obj[]>(listing)).body.map((vm) => vm['name_label']), ['renamed'], 'a listing shows the change at once')
  })

  t.test('one invalid field: 422, and nothing is applied', async (t) => {
    const before = await get(server, vmPath)
    for (const body of [{ nameLabel: 'x', power_state: 'Running' }, { nameLabel: 'x', cpus: 0 }, { nameLabel: 'x', bogus: 1 }, {}]) {
      const response = await server.json<Obj>(vmPath, jsonBody(body, 'PATCH'))
      t.equal(response.status, 422, JSON.stringify(body))
      t.equal(response.body['code'], 'INVALID_PARAMETERS')
    }
    t.same(await get(server, vmPath), before)
    t.equal((await server.json('/rest/v0/vms/nope', jsonBody({ nameLabel: 'x' }, 'PATCH'))).status, 404)
  })

  t.test('VDI size grows but never shrinks', async (t) => {
    const vdi = ((await server.json<Obj[]>('/rest/v0/vdis?fields=id,size&limit=1')).body[0] as Obj)
    const path = `/rest/v0/vdis/${String(vdi['id'])}`
    const size = vdi['size'] as number
    const shrink = await server.json<Obj>(path, jsonBody({ size: size - 1 }, 'PATCH'))
    t.equal(shrink.status, 422)
    t.equal((await get(server, path))['size'], size)
    t.equal((await server.request(path, jsonBody({ size: size * 2, name_label: 'bigger' }, 'PATCH'))).status, 204)
    t.match(await get(server, path), { size: size * 2, name_label: 'bigger' })
  })

  t.test('VIF, network, SR, host and pool fields', async (t) => {
    const vif = ((await server.json<Obj[]>('/rest/v0/vifs?fields=id&limit=1')).body[0] as Obj)['id']
    const vifPath = `/rest/v0/vifs/${String(vif)}`
    t.equal(
      (await server.request(vifPath, jsonBody({ lockingMode: 'locked', allowedIpv4Addresses: ['10.0.0.9'], rateLimit: 1000, txChecksumming: false }, 'PATCH'))).status,
      204,
    )
    t.match(await get(server, vifPath), { lockingMode: 'locked', allowedIpv4Addresses: ['10.0.0.9'], rateLimit: 1000, txChecksumming: false })
    t.equal((await server.json(vifPath, jsonBody({ allowedIpv4Addresses: ['not-an-ip'] }, 'PATCH'))).status, 422)
    for (const path of [`/rest/v0/srs/${demo.defaultSr}`, `/rest/v0/hosts/${demo.host3}`, `/rest/v0/pools/${demo.pool}`]) {
      t.equal((await server.request(path, jsonBody({ name_label: 'new name', name_description: 'd' }, 'PATCH'))).status, 204, path)
      t.match(await get(server, path), { name_label: 'new name', name_description: 'd' })
    }
    const network = ((await server.json<Obj[]>('/rest/v0/networks?fields=id&limit=1')).body[0] as Obj)['id']
    t.equal((await server.request(`/rest/v0/networks/${String(network)}`, jsonBody({ name_label: 'lan' }, 'PATCH'))).status, 204)
    t.equal((await server.json(`/rest/v0/hosts/${demo.host3}`, jsonBody({ nameLabel: 'camel' }, 'PATCH'))).status, 422)
  })

  t.test('tags: PUT and DELETE are idempotent and take URL-encoded tags', async (t) => {
    const tag = 'env/prod 1'
    const path = `${vmPath}/tags/${encodeURIComponent(tag)}`
    for (let i = 0; i < 2; i++) t.equal((await server.request(path, { method: 'PUT' })).status, 204)
    const tags = (await get(server, vmPath))['tags'] as string[]
    t.equal(tags.filter((x) => x === tag).length, 1)
    for (let i = 0; i < 2; i++) t.equal((await server.request(path, { method: 'DELETE' })).status, 204)
    t.notOk(((await get(server, vmPath))['tags'] as string[]).includes(tag))
    t.equal((await server.json(`/rest/v0/vms/nope/tags/x`, { method: 'PUT' })).status, 404)
    t.equal((await server.request(`/rest/v0/hosts/${demo.host3}/tags/x`, { method: 'PUT' })).status, 204)
  })

  t.test('DELETE a running VM: halted first, disks destroyed', async (t) => {
    const vm = await get(server, `/rest/v0/vms/${demo.runningVm}`)
    const vbds = vm['$VBDs'] as string[]
    const vdis: string[] = []
    for (const vbd of vbds) {
      const record = await get(server, `/rest/v0/vbds/${vbd}`)
      if (record['is_cd_drive'] !== true && typeof record['VDI'] === 'string') vdis.push(record['VDI'])
    }
    t.ok(vdis.length > 0)
    t.equal((await server.request(`/rest/v0/vms/${demo.runningVm}`, { method: 'DELETE' })).status, 204)
    t.equal((await server.json(`/rest/v0/vms/${demo.runningVm}`)).status, 404)
    for (const vdi of vdis) t.equal((await server.json(`/rest/v0/vdis/${vdi}`)).status, 404, 'disk destroyed')
    const host = await get(server, `/rest/v0/hosts/${String(vm['$container'])}`)
    t.notOk((host['residentVms'] as string[]).includes(demo.runningVm))
    t.equal((await server.json(`/rest/v0/vms/${demo.runningVm}`, { method: 'DELETE' })).status, 404)
  })

  t.test('DELETE snapshots and disks; a network in use is 409', async (t) => {
    const snapshot = ((await server.json<Obj[]>('/rest/v0/vm-snapshots?fields=id')).body[0] as Obj)['id']
    t.equal((await server.request(`/rest/v0/vm-snapshots/${String(snapshot)}`, { method: 'DELETE' })).status, 204)
    t.equal((await server.json(`/rest/v0/vm-snapshots/${String(snapshot)}`)).status, 404)
    const vdiSnapshot = ((await server.json<Obj[]>('/rest/v0/vdi-snapshots?fields=id')).body[0] as Obj | undefined)?.['id']
    if (vdiSnapshot !== undefined) t.equal((await server.request(`/rest/v0/vdi-snapshots/${String(vdiSnapshot)}`, { method: 'DELETE' })).status, 204)
    const vdi = ((await server.json<Obj[]>('/rest/v0/vdis?fields=id&limit=1')).body[0] as Obj)['id']
    t.equal((await server.request(`/rest/v0/vdis/${String(vdi)}`, { method: 'DELETE' })).status, 204)
    const used = ((await server.json<Obj[]>('/rest/v0/networks?fields=id,VIFs')).body.find((n) => (n['VIFs'] as string[]).length > 0) as Obj)['id']
    const conflict = await server.json<Obj>(`/rest/v0/networks/${String(used)}`, { method: 'DELETE' })
    t.equal(conflict.status, 409)
    t.equal((await server.json(`/rest/v0/networks/${String(used)}`)).status, 200)
    t.equal((await server.json(`/rest/v0/hosts/${demo.host3}`, { method: 'DELETE' })).status, 405, 'hosts are not deletable')
  })
})

t.test('changes are durable across a restart', async (t) => {
  const first = await startServer()
  const demo = await demoIds(first)
  await first.request(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: 'kept' }, 'PATCH'))
  await first.request(`/rest/v0/vms/${demo.haltedVm}/tags/durable`, { method: 'PUT' })
  await first.close({ keepData: true })
  const second = await startServer({ dataDir: first.dataDir })
  t.teardown(async () => {
    await second.close()
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const vm = await get(second, `/rest/v0/vms/${demo.haltedVm}`)
  t.equal(vm['name_label'], 'kept')
  t.ok((vm['tags'] as string[]).includes('durable'))
})
