import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedAuth } from '../helpers/scoped-user.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body
const post = (server: TestServer, path: string, body: unknown, auth?: string) => server.json<Obj>(path, { ...jsonBody(body), ...(auth === undefined ? {} : { auth }) })
const act = (server: TestServer, path: string) => server.json<Obj>(`${path}?sync=true`, { method: 'POST' })
const count = async (server: TestServer, collection: string): Promise<number> => (await server.json<string[]>(`/rest/v0/${collection}`)).body.length

t.test('POST /vdis, /vbds and /vifs create, connect and disconnect act on a running VM, DELETE removes', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)

  const vdiResponse = await post(server, '/rest/v0/vdis', { srId: demo.defaultSr, name_label: 'scratch', virtual_size: 1 << 30 })
  t.equal(vdiResponse.status, 201)
  const vdi = String(vdiResponse.body['id'])
  t.equal(vdiResponse.response.headers.get('location'), `/rest/v0/vdis/${vdi}`)
  t.match(await get(server, `/rest/v0/vdis/${vdi}`), { name_label: 'scratch', size: 1 << 30, $SR: demo.defaultSr, $VBDs: [] })

  const vm = await get(server, `/rest/v0/vms/${demo.runningVm}`)
  const vbdResponse = await post(server, '/rest/v0/vbds', { VM: demo.runningVm, VDI: vdi, bootable: false, mode: 'RW' })
  t.equal(vbdResponse.status, 201)
  const vbd = String(vbdResponse.body['id'])
  t.equal(vbdResponse.response.headers.get('location'), `/rest/v0/vbds/${vbd}`)
  const taken = await Promise.all((vm['$VBDs'] as string[]).map(async (id) => String((await get(server, `/rest/v0/vbds/${id}`))['position'])))
  t.match(await get(server, `/rest/v0/vbds/${vbd}`), { VM: demo.runningVm, VDI: vdi, attached: false, read_only: false, bootable: false, is_cd_drive: false })
  t.ok(((await get(server, `/rest/v0/vms/${demo.runningVm}`))['$VBDs'] as string[]).includes(vbd), 'the VM lists it')
  t.notOk(taken.includes(String((await get(server, `/rest/v0/vbds/${vbd}`))['position'])), 'in a free slot')

  t.equal((await act(server, `/rest/v0/vbds/${vbd}/actions/connect`)).status, 204)
  t.equal((await get(server, `/rest/v0/vbds/${vbd}`))['attached'], true)
  const again = await act(server, `/rest/v0/vbds/${vbd}/actions/connect`)
  t.match(again, { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'attached', actual: true, expected: false } } })
  const busy = await server.json<Obj>(`/rest/v0/vbds/${vbd}`, { method: 'DELETE' })
  t.match(busy, { status: 409, body: { code: 'INCORRECT_STATE' } }, 'a plugged drive is not destroyed')
  t.equal((await act(server, `/rest/v0/vbds/${vbd}/actions/disconnect`)).status, 204)
  t.equal((await get(server, `/rest/v0/vbds/${vbd}`))['attached'], false)
  t.equal((await server.request(`/rest/v0/vbds/${vbd}`, { method: 'DELETE' })).status, 204)
  t.equal((await server.request(`/rest/v0/vbds/${vbd}`)).status, 404)
  t.match(await get(server, `/rest/v0/vdis/${vdi}`), { $VBDs: [] }, 'its disk stays')

  const networks = await server.json<Obj[]>('/rest/v0/networks?fields=id,$pool')
  const network = String(networks.body.find((n) => n['$pool'] === vm['$pool'])?.['id'])
  const vifResponse = await post(server, '/rest/v0/vifs', { vmId: demo.runningVm, networkId: network })
  t.equal(vifResponse.status, 201)
  const vif = String(vifResponse.body['id'])
  t.equal(vifResponse.response.headers.get('location'), `/rest/v0/vifs/${vif}`)
  const vifRecord = await get(server, `/rest/v0/vifs/${vif}`)
  t.match(vifRecord, { $VM: demo.runningVm, $network: network, attached: false, MAC: /^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/ })
  const devices = await Promise.all(((vm['VIFs'] as string[]) ?? []).map(async (id) => Number((await get(server, `/rest/v0/vifs/${id}`))['device'])))
  t.equal(Number(vifRecord['device']), devices.length === 0 ? 0 : Array.from({ length: devices.length + 1 }, (_, i) => i).find((n) => !devices.includes(n)), 'the next free device')
  const named = await post(server, '/rest/v0/vifs', { vmId: demo.runningVm, networkId: network, MAC: '02:00:00:00:00:2A', device: '7' })
  t.match(await get(server, `/rest/v0/vifs/${String(named.body['id'])}`), { MAC: '02:00:00:00:00:2a', device: '7' })
  t.equal((await act(server, `/rest/v0/vifs/${vif}/actions/connect`)).status, 204)
  t.equal((await get(server, `/rest/v0/vifs/${vif}`))['attached'], true)
  t.equal((await act(server, `/rest/v0/vifs/${vif}/actions/disconnect`)).status, 204)
  t.equal((await server.request(`/rest/v0/vifs/${vif}`, { method: 'DELETE' })).status, 204)
  t.notOk(((await get(server, `/rest/v0/vms/${demo.runningVm}`))['VIFs'] as string[]).includes(vif))
})

t.test('refusals: the state, a used slot, a missing object, a bad field, a caller without the privilege; nothing changes', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const vdi = String((await post(server, '/rest/v0/vdis', { srId: demo.defaultSr, name_label: 'spare', virtual_size: 1 << 20 })).body['id'])
  const vbd = String((await post(server, '/rest/v0/vbds', { VM: demo.haltedVm, VDI: vdi })).body['id'])
  const before = { vbds: await count(server, 'vbds'), vifs: await count(server, 'vifs'), vdis: await count(server, 'vdis'), vm: await get(server, `/rest/v0/vms/${demo.haltedVm}`) }

  t.match(await act(server, `/rest/v0/vbds/${vbd}/actions/connect`), { status: 409, body: { code: 'INCORRECT_STATE', data: { property: 'power_state', expected: 'Running', actual: 'Halted' } } }, 'a halted VM\u2019s drive is not plugged')
  t.match(await act(server, `/rest/v0/vbds/${vbd}/actions/disconnect`), { status: 409, body: { code: 'INCORRECT_STATE' } })
  const slot = String((await get(server, `/rest/v0/vbds/${vbd}`))['position'])
  t.match(await post(server, '/rest/v0/vbds', { VM: demo.haltedVm, VDI: vdi, userdevice: slot }), { status: 409, body: { code: 'OBJECT_ALREADY_EXISTS', data: { type: 'VBD', field: 'userdevice', value: slot } } })
  t.match(await post(server, '/rest/v0/vbds', { VM: 'nope', VDI: vdi }), { status: 404, body: { code: 'NO_SUCH_OBJECT', data: { id: 'nope', type: 'VM' } } })
  t.match(await post(server, '/rest/v0/vifs', { vmId: demo.haltedVm, networkId: 'nope' }), { status: 404, body: { data: { id: 'nope', type: 'network' } } })
  t.match(await post(server, '/rest/v0/vdis', { srId: 'nope', name_label: 'x', virtual_size: 1 }), { status: 404, body: { data: { id: 'nope', type: 'SR' } } })
  t.match(await post(server, '/rest/v0/vbds', { VM: demo.haltedVm, VDI: vdi, mode: 'RX' }), { status: 422, body: { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.mode' }] } } })
  t.match(await post(server, '/rest/v0/vifs', { vmId: demo.haltedVm, networkId: 'x', MAC: 'zz' }), { status: 422, body: { data: { errors: [{ path: 'body.MAC' }] } } })
  t.match(await post(server, '/rest/v0/vdis', { srId: demo.defaultSr, name_label: 'x', virtual_size: 0 }), { status: 422, body: { data: { errors: [{ path: 'body.virtual_size' }] } } })
  t.match(await post(server, '/rest/v0/vbds', { VM: demo.haltedVm }), { status: 422, body: { data: { errors: [{ path: 'body.VDI' }] } } }, 'a disk drive needs a disk')

  const reader = await scopedAuth(server, 'reader@example.net', [
    { resource: 'vm', action: 'read' },
    { resource: 'vdi', action: 'read' },
    { resource: 'vbd', action: 'read' },
    { resource: 'network', action: 'read' },
    { resource: 'vdi', action: 'create' },
  ])
  t.match(await post(server, '/rest/v0/vbds', { VM: demo.haltedVm, VDI: vdi }, reader), { status: 403, body: { code: 'NOT_ENOUGH_PRIVILEGES', data: { missingPrivileges: [{ resource: 'vbd', action: 'create' }] } } })
  t.match(await post(server, '/rest/v0/vifs', { vmId: demo.haltedVm, networkId: 'x' }, reader), { status: 403, body: { data: { missingPrivileges: [{ resource: 'vif', action: 'create' }] } } })
  t.match(await post(server, '/rest/v0/vdis', { srId: demo.defaultSr, name_label: 'x', virtual_size: 1 }, reader), { status: 403, body: { data: { missingPrivileges: [{ resource: 'sr', action: 'import:vdi', objectId: demo.defaultSr }] } } }, 'a VDI also needs import:vdi on its SR')
  t.match(await server.json(`/rest/v0/vbds/${vbd}/actions/connect?sync=true`, { method: 'POST', auth: reader }), { status: 403, body: { data: { missingPrivileges: [{ resource: 'vbd', action: 'connect' }] } } })
  t.match(await server.json(`/rest/v0/vbds/${vbd}`, { method: 'DELETE', auth: reader }), { status: 403, body: { data: { missingPrivileges: [{ resource: 'vbd', action: 'delete' }] } } })

  t.same(
    { vbds: await count(server, 'vbds'), vifs: await count(server, 'vifs'), vdis: await count(server, 'vdis'), vm: await get(server, `/rest/v0/vms/${demo.haltedVm}`) },
    before,
    'the refusals changed nothing',
  )
  t.equal((await get(server, `/rest/v0/vbds/${vbd}`))['attached'], false)
})
