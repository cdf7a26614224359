import t from 'tap'
import type { Driver } from '../../src/driver/types.js'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

const get = async (server: TestServer, path: string): Promise<Obj> => (await server.json<Obj>(path)).body
const act = (server: TestServer, path: string, body?: unknown, sync = true) =>
  server.json<Obj>(`${path}${sync ? '?sync=true' : ''}`, body === undefined ? { method: 'POST' } : jsonBody(body))
/** Brings a VM to a power state first, so that each subtest stands on its own. */
async function ensurePower(server: TestServer, vm: string, wanted: 'Running' | 'Halted'): Promise<void> {
  const state = (await get(server, `/rest/v0/vms/${vm}`))['power_state']
  if (state === wanted) return
  const action = wanted === 'Halted' ? 'hard_shutdown' : ({ Halted: 'start', Paused: 'unpause', Suspended: 'resume' } as Record<string, string>)[String(state)]
  const response = await act(server, `/rest/v0/vms/${vm}/actions/${String(action)}`)
  if (response.status !== 204) throw new Error(`cannot bring ${vm} from ${String(state)} to ${wanted}: ${response.status}`)
}

const taskCount = async (server: TestServer): Promise<number> => (await server.json<string[]>('/rest/v0/tasks')).body.length

t.test('VM actions', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())
  const adminId = ((await server.json<Obj[]>('/rest/v0/users?fields=id')).body[0] as Obj)['id']

  t.test('async start: 202, Location, taskId; the task records the action; the VM runs on a host with addresses', async (t) => {
    await ensurePower(server, demo.haltedVm, 'Halted')
    const response = await act(server, `/rest/v0/vms/${demo.haltedVm}/actions/start`, undefined, false)
    t.equal(response.status, 202)
    const taskId = response.body['taskId'] as string
    t.match(taskId, /^[0-9a-z]{9}-[0-9a-z]+$/)
    t.equal(response.response.headers.get('location'), `/rest/v0/tasks/${taskId}`)
    const task = await get(server, `/rest/v0/tasks/${taskId}?wait=true`)
    t.match(task, {
      id: taskId,
      status: 'success',
      properties: {
        name: 'REST API: start VM',
        objectId: demo.haltedVm,
        objectType: 'VM',
        userId: adminId,
        type: 'xo:rest-api:action',
        params: {},
        progress: 100,
      },
    })
    t.type(task['end'], 'number')
    const vm = await get(server, `/rest/v0/vms/${demo.haltedVm}`)
    t.equal(vm['power_state'], 'Running')
    t.equal((await server.json(`/rest/v0/hosts/${String(vm['$container'])}`)).status, 200)
    t.ok(Object.keys(vm['addresses'] as Obj).length > 0)
  })

  t.test('sync shutdown: 204; the VM is halted and loses its addresses', async (t) => {
    await ensurePower(server, demo.haltedVm, 'Running')
    const response = await act(server, `/rest/v0/vms/${demo.haltedVm}/actions/clean_shutdown`)
    t.equal(response.status, 204)
    const vm = await get(server, `/rest/v0/vms/${demo.haltedVm}`)
    t.equal(vm['power_state'], 'Halted')
    t.same(vm['addresses'], {})
  })

  t.test('the bare ?sync flag counts', async (t) => {
    await ensurePower(server, demo.haltedVm, 'Halted')
    const response = await server.request(`/rest/v0/vms/${demo.haltedVm}/actions/start?sync`, { method: 'POST' })
    t.equal(response.status, 204)
    t.equal((await get(server, `/rest/v0/vms/${demo.haltedVm}`))['power_state'], 'Running')
  })

  t.test('an action not allowed in the current state: 409 in sync, a failed task in async', async (t) => {
    await ensurePower(server, demo.runningVm, 'Running')
    const sync = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/start`)
    t.equal(sync.status, 409)
    t.match(sync.body, { error: 'incorrect state', code: 'INCORRECT_STATE', data: { actual: 'Running', expected: 'Halted' } })
    const async = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/resume`, undefined, false)
    t.equal(async.status, 202)
    const task = await get(server, `/rest/v0/tasks/${String(async.body['taskId'])}?wait=true`)
    t.equal(task['status'], 'failure')
    t.match(task['result'], { message: 'incorrect state', code: 'INCORRECT_STATE', data: { actual: 'Running', expected: 'Suspended' } })
    t.notMatch(JSON.stringify(task['result']), /stack|at /)
  })

  t.test('missing objects are a synchronous 404 and start no task', async (t) => {
    const before = await taskCount(server)
    for (const sync of [true, false]) {
      const missing = await act(server, '/rest/v0/vms/nope/actions/start', undefined, sync)
      t.equal(missing.status, 404)
      t.same(missing.body, { error: 'no such VM nope', code: 'NO_SUCH_OBJECT', data: { id: 'nope', type: 'VM' } })
      const host = await act(server, `/rest/v0/vms/${demo.haltedVm}/actions/migrate`, { hostId: 'nohost' }, sync)
      t.equal(host.status, 404)
      t.same(host.body, { error: 'no such host nohost', code: 'NO_SUCH_OBJECT', data: { id: 'nohost', type: 'host' } })
      const wrongType = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/migrate`, { hostId: demo.pool }, sync)
      t.equal(wrongType.status, 404, 'an id of another type does not resolve')
    }
    t.equal(await taskCount(server), before)
  })

  t.test('bad parameters are 422 naming the field and start no task', async (t) => {
    const before = await taskCount(server)
    const bad = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/migrate`, { hostId: 5, extra: true }, false)
    t.equal(bad.status, 422)
    const paths = ((bad.body['data'] as Obj)['errors'] as Obj[]).map((e) => e['path']).sort()
    t.same(paths, ['body.extra', 'body.hostId'])
    const missing = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/migrate`, {})
    t.equal(missing.status, 422)
    t.match(missing.body, { data: { errors: [{ path: 'body.hostId', message: 'is required' }] } })
    t.equal(await taskCount(server), before)
  })

  t.test('snapshot and clone create objects: 201 {id} with Location', async (t) => {
    await ensurePower(server, demo.runningVm, 'Running')
    const snapshot = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/snapshot`, { name_label: 'before upgrade' })
    t.equal(snapshot.status, 201)
    const snapshotId = snapshot.body['id'] as string
    t.equal(snapshot.response.headers.get('location'), `/rest/v0/vm-snapshots/${snapshotId}`)
    const record = await get(server, `/rest/v0/vm-snapshots/${snapshotId}`)
    t.equal(record['name_label'], 'before upgrade')
    t.equal(record['$snapshot_of'], demo.runningVm)
    t.ok(((await get(server, `/rest/v0/vms/${demo.runningVm}`))['snapshots'] as string[]).includes(snapshotId))

    const clone = await act(server, `/rest/v0/vms/${demo.localHaltedVm}/actions/clone`, { name_label: 'copy' })
    t.equal(clone.status, 201)
    t.equal(clone.response.headers.get('location'), `/rest/v0/vms/${String(clone.body['id'])}`)
    t.equal((await get(server, `/rest/v0/vms/${String(clone.body['id'])}`))['name_label'], 'copy')

    const revert = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/revert_snapshot`, { snapshotId })
    t.equal(revert.status, 204)
    const foreign = await act(server, `/rest/v0/vms/${demo.localHaltedVm}/actions/revert_snapshot`, { snapshotId })
    t.equal(foreign.status, 422, 'a snapshot of another VM')
  })

  t.test('power transitions', async (t) => {
    await ensurePower(server, demo.runningVm, 'Running')
    const vm = `/rest/v0/vms/${demo.runningVm}`
    const state = async (): Promise<unknown> => (await get(server, vm))['power_state']
    const steps: Array<[string, string]> = [
      ['pause', 'Paused'],
      ['unpause', 'Running'],
      ['suspend', 'Suspended'],
      ['resume', 'Running'],
      ['clean_reboot', 'Running'],
      ['hard_reboot', 'Running'],
      ['hard_shutdown', 'Halted'],
      ['start', 'Running'],
    ]
    for (const [action, expected] of steps) {
      const response = await act(server, `${vm}/actions/${action}`)
      t.equal(response.status, 204, action)
      t.equal(await state(), expected, action)
    }
    const paused = await act(server, `/rest/v0/vms/${demo.pausedVm}/actions/suspend`)
    t.equal(paused.status, 409)
    t.match(paused.body, { data: { actual: 'Paused', expected: 'Running' } })
  })

  t.test('migrate moves a running VM to another host', async (t) => {
    await ensurePower(server, demo.runningVm, 'Running')
    const vm = await get(server, `/rest/v0/vms/${demo.runningVm}`)
    const target = vm['$container'] === demo.host2 ? demo.host3 : demo.host2
    const response = await act(server, `/rest/v0/vms/${demo.runningVm}/actions/migrate`, { hostId: target })
    t.equal(response.status, 204)
    t.equal((await get(server, `/rest/v0/vms/${demo.runningVm}`))['$container'], target)
    t.ok(((await get(server, `/rest/v0/hosts/${target}`))['residentVms'] as string[]).includes(demo.runningVm))
  })

  t.test('discovery: action names and parameter schemas', async (t) => {
    const names = await server.json<string[]>(`/rest/v0/vms/${demo.runningVm}/actions`)
    t.equal(names.status, 200)
    t.same(names.body, [
      'start', 'clean_shutdown', 'hard_shutdown', 'clean_reboot', 'hard_reboot', 'pause', 'unpause',
      'suspend', 'resume', 'snapshot', 'clone', 'revert_snapshot', 'migrate',
    ])
    const start = await server.json<Obj>(`/rest/v0/vms/${demo.runningVm}/actions/start`)
    t.same(start.body, {
      name: 'start',
      params: {
        type: 'object',
        additionalProperties: false,
        properties: { hostId: { type: 'string', minLength: 1, maxLength: 200, description: 'host to start the VM on' } },
      },
    })
    t.equal((await server.json(`/rest/v0/vms/${demo.runningVm}/actions/fly`)).status, 404)
    const unknown = await server.json(`/rest/v0/vms/${demo.runningVm}/actions/fly`, { method: 'POST' })
    t.equal(unknown.status, 404)
    t.same(unknown.body, { error: 'no such action fly', code: 'NO_SUCH_OBJECT', data: { id: 'fly', type: 'action' } })
    t.equal((await server.json('/rest/v0/vms/nope/actions')).status, 404)
  })
})

t.test('host, pool, SR and VDI actions', async (t) => {
  const server = await startServer()
  const demo = await demoIds(server)
  t.teardown(() => server.close())

  t.test('disable and enable a host', async (t) => {
    t.equal((await act(server, `/rest/v0/hosts/${demo.host3}/actions/disable`)).status, 204)
    t.equal((await get(server, `/rest/v0/hosts/${demo.host3}`))['enabled'], false)
    t.equal((await act(server, `/rest/v0/hosts/${demo.host3}/actions/enable`)).status, 204)
    t.equal((await get(server, `/rest/v0/hosts/${demo.host3}`))['enabled'], true)
  })

  t.test('a clean host shutdown evacuates its running VMs; start brings it back', async (t) => {
    const before = (await get(server, `/rest/v0/hosts/${demo.host2}`))['residentVms'] as string[]
    const running = (await server.json<Obj[]>(`/rest/v0/vms?fields=id,power_state,$container&filter=power_state:Running`)).body
      .filter((vm) => vm['$container'] === demo.host2)
      .map((vm) => vm['id'])
    t.equal((await act(server, `/rest/v0/hosts/${demo.host2}/actions/clean_shutdown`)).status, 204)
    const host = await get(server, `/rest/v0/hosts/${demo.host2}`)
    t.equal(host['power_state'], 'Halted')
    for (const id of running) {
      const vm = await get(server, `/rest/v0/vms/${String(id)}`)
      t.equal(vm['power_state'], 'Running', 'still running')
      t.not(vm['$container'], demo.host2, 'elsewhere')
    }
    t.ok(before.length >= 0)
    t.equal((await act(server, `/rest/v0/hosts/${demo.host2}/actions/start`)).status, 204)
    t.equal((await get(server, `/rest/v0/hosts/${demo.host2}`))['power_state'], 'Running')
    t.equal((await act(server, `/rest/v0/hosts/${demo.host2}/actions/clean_reboot`)).status, 204)
  })

  t.test('create_vm from a template, with disks and a VIF, booted', async (t) => {
    const network = ((await server.json<Obj[]>('/rest/v0/networks?fields=id')).body[0] as Obj)['id']
    const response = await act(server, `/rest/v0/pools/${demo.pool}/actions/create_vm`, {
      name_label: 'created',
      template: demo.template,
      vdis: [{ name_label: 'root', size: 10 * 1024 ** 3, sr: demo.defaultSr }],
      vifs: [{ network }],
      boot: true,
    })
    t.equal(response.status, 201)
    const id = response.body['id'] as string
    t.equal(response.response.headers.get('location'), `/rest/v0/vms/${id}`)
    const vm = await get(server, `/rest/v0/vms/${id}`)
    t.equal(vm['name_label'], 'created')
    t.equal(vm['power_state'], 'Running')
    t.equal((vm['VIFs'] as string[]).length, 1)
    const disks = (await server.json<Obj[]>(`/rest/v0/vdis?fields=$SR,size&filter=name_label:root`)).body
    t.ok(disks.some((disk) => disk['$SR'] === demo.defaultSr && disk['size'] === 10 * 1024 ** 3))
    const missingTemplate = await act(server, `/rest/v0/pools/${demo.pool}/actions/create_vm`, { name_label: 'x', template: 'nope' })
    t.equal(missingTemplate.status, 404)
    t.same(missingTemplate.body, { error: 'no such VM-template nope', code: 'NO_SUCH_OBJECT', data: { id: 'nope', type: 'VM-template' } })
    const tasksBefore = (await server.json<string[]>('/rest/v0/tasks')).body.length
    for (const body of [
      { name_label: 'x', template: demo.template, vdis: [{ name_label: 'd', size: 1024 ** 3, sr: 'nosr' }] },
      { name_label: 'x', template: demo.template, vifs: [{ network }, { network: 'nonet' }] },
    ]) {
      const nested = await act(server, `/rest/v0/pools/${demo.pool}/actions/create_vm`, body, false)
      t.equal(nested.status, 404, 'nested references are resolved before any task too')
    }
    t.equal((await server.json<string[]>('/rest/v0/tasks')).body.length, tasksBefore)
  })

  t.test('SR scan and reclaim_space; VDI migrate gives the disk a new id on the new SR', async (t) => {
    t.equal((await act(server, `/rest/v0/srs/${demo.defaultSr}/actions/scan`)).status, 204)
    t.equal((await act(server, `/rest/v0/srs/${demo.defaultSr}/actions/reclaim_space`)).status, 204)
    const vdi = ((await server.json<Obj[]>(`/rest/v0/vdis?fields=id,$SR&filter=$SR:${demo.defaultSr}&limit=1`)).body[0] as Obj)['id'] as string
    const local = ((await server.json<Obj[]>('/rest/v0/srs?fields=id,SR_type,content_type&filter=!shared?')).body.find(
      (sr) => sr['content_type'] !== 'iso' && sr['SR_type'] !== 'iso',
    ) as Obj)['id'] as string
    const moved = await act(server, `/rest/v0/vdis/${vdi}/actions/migrate`, { srId: local })
    t.equal(moved.status, 201)
    const newId = moved.body['id'] as string
    t.equal(moved.response.headers.get('location'), `/rest/v0/vdis/${newId}`)
    t.equal((await get(server, `/rest/v0/vdis/${newId}`))['$SR'], local)
  })

  t.test('emergency_shutdown halts every VM of the pool; rolling_reboot reports progress', async (t) => {
    const reboot = await act(server, `/rest/v0/pools/${demo.pool}/actions/rolling_reboot`, undefined, false)
    t.equal(reboot.status, 202)
    const task = await get(server, `/rest/v0/tasks/${String(reboot.body['taskId'])}?wait=true`)
    t.equal(task['status'], 'success')
    t.equal((task['properties'] as Obj)['progress'], 100)
    t.equal((await act(server, `/rest/v0/pools/${demo.pool}/actions/emergency_shutdown`)).status, 204)
    const running = (await server.json<string[]>('/rest/v0/vms?filter=power_state:Running')).body
    t.same(running, [])
  })
})

/** The lab driver declaring other capabilities; everything else is the lab's own. */
const declaring =
  (change: (capabilities: Driver['capabilities']) => Driver['capabilities']) =>
  (lab: Driver): Driver =>
    new Proxy(lab, {
      get: (target, key) => {
        if (key === 'capabilities') return change(target.capabilities)
        const value: unknown = Reflect.get(target, key, target)
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
      },
    })

t.test('routes follow what the driver declares; a declaration the catalogue does not know stops the start', async (t) => {
  const fewer = declaring((capabilities) => ({ ...capabilities, actions: { ...capabilities.actions, VM: ['start'] }, tags: [] }))
  const server = await startServer({ app: { wrapDriver: fewer } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  t.same((await server.json(`/rest/v0/vms/${demo.runningVm}/actions`)).body, ['start'])
  t.equal((await act(server, `/rest/v0/vms/${demo.runningVm}/actions/clean_shutdown`)).status, 404)
  t.equal((await server.request(`/rest/v0/vms/${demo.runningVm}/tags/x`, { method: 'PUT' })).status, 404)

  const unknown = declaring((capabilities) => ({ ...capabilities, actions: { ...capabilities.actions, VM: ['start', 'teleport'] } }))
  await t.rejects(startServer({ app: { wrapDriver: unknown } }), /action teleport on VM: not in the catalogue/)
})
