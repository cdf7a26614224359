import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import { keelErrorOf } from '../../src/driver/xapi/errors.js'
import { XapiOperations, xapiCapabilities } from '../../src/driver/xapi/operations.js'
import { XapiError, type XapiCallOptions, type XapiPool, type XapiTaskOptions } from '../../src/driver/xapi/types.js'
import { INSTALLATION_MARK } from '../../src/installation.js'
import { context } from '../helpers/lab.js'
import { simulatedPool, type SimulatedPool } from '../helpers/xapi-pool.js'
import type { TestScope } from '../helpers/lab.js'
import { failure, SAMPLES, TRANSITIONS, type State } from './fixtures/lab.js'

interface Setup extends SimulatedPool {
  readonly ops: XapiOperations
  named(type: string, name: string): XoRecord
  /** the XAPI record behind a lab record */
  of(record: XoRecord): Readonly<Record<string, unknown>>
}

async function setup(t: TestScope, stepDelay?: number): Promise<Setup> {
  const sim = await simulatedPool(t, stepDelay === undefined ? {} : { stepDelay })
  const driver = sim.sim.simulator.services.driver
  const named = (type: string, name: string): XoRecord => {
    const record = [...driver.objectsOfType(type)].find((candidate) => candidate['name_label'] === name)
    if (record === undefined) throw new Error(`no ${type} named ${name}`)
    return record
  }
  return { ...sim, ops: new XapiOperations(sim.locator, sim.index), named, of: (record) => sim.xapi(String(record['_xapiRef'])) }
}

/** The operations on a host older than the simulator: `missing` answer MESSAGE_METHOD_UNKNOWN, as XAPI answers a method it lacks. */
function lacking(env: Setup, missing: readonly string[]): XapiOperations {
  const unknown = (method: string) => Promise.reject(new XapiError('MESSAGE_METHOD_UNKNOWN', [method]))
  const older = (pool: XapiPool): XapiPool => ({
    poolId: pool.poolId,
    call: <T>(method: string, params: readonly unknown[], options?: XapiCallOptions) => (missing.includes(method) ? unknown(method) : pool.call<T>(method, params, options)),
    callAsync: <T>(method: string, params: readonly unknown[], options?: XapiTaskOptions) =>
      missing.includes(method) ? unknown(`Async.${method}`) : pool.callAsync<T>(method, params, options),
    request: (request) => pool.request(request),
    settled: (options) => pool.settled(options),
  })
  const locate = (record: XoRecord) => {
    const location = env.locator.locate(record)
    return location === undefined ? undefined : { ...location, pool: older(location.pool) }
  }
  return new XapiOperations({ ...env.locator, locate }, env.index)
}

t.test('every power action in every power state runs as XAPI runs it, or is refused as the lab refuses it', async (t) => {
  // The power actions: those that leave the VM in a state of its own.
  for (const [action, { from, to }] of Object.entries(TRANSITIONS).filter(([, transition]) => transition.to !== undefined)) {
    const env = await setup(t)
    for (const [state, name] of Object.entries(SAMPLES) as Array<[State, string]>) {
      const vm = env.named('VM', name)
      const ctx = context()
      if (!from.includes(state)) {
        const error = await failure(env.ops.perform(vm, action, {}, ctx))
        t.equal(error.code, 'INCORRECT_STATE', `${action} on ${state}: refused`)
        t.match(error.data, { actual: state, object: vm.id, property: 'power_state' })
        t.equal(env.of(vm)['power_state'], state, `${action} on ${state}: nothing changed`)
        continue
      }
      t.equal(await env.ops.perform(vm, action, {}, ctx), undefined, `${action} on ${state}`)
      t.equal(env.of(vm)['power_state'], to, `${action} on ${state} leaves it ${to}`)
      t.ok(ctx.reported.every((p, i) => p >= 0 && p <= 100 && p >= (ctx.reported[i - 1] ?? 0)), 'progress, if any, rising')
    }
    t.same(env.refs('task'), [], `${action}: every XAPI task destroyed`)
  }
})

t.test('start on a host, and migrate, move the VM to the host named', async (t) => {
  const env = await setup(t)
  const halted = env.named('VM', 'staging-app')
  const target = env.named('host', 'xcp-ng-02')
  await env.ops.perform(halted, 'start', { hostId: target.id }, context())
  t.equal(env.of(halted)['resident_on'], target['_xapiRef'])
  const other = env.named('host', 'xcp-ng-03')
  await env.ops.perform(halted, 'migrate', { hostId: other.id }, context())
  t.equal(env.of(halted)['resident_on'], other['_xapiRef'])
  const missing = await failure(env.ops.perform(halted, 'migrate', { hostId: 'no-such-host' }, context()))
  t.same([missing.code, missing.data], ['NO_SUCH_OBJECT', { id: 'no-such-host', type: 'host' }])
  t.equal(env.of(halted)['resident_on'], other['_xapiRef'], 'nothing moved')
})

t.test('snapshot and clone answer the new object once the index holds it; a snapshot carries the taker’s other_config, never an inherited mark', async (t) => {
  const env = await setup(t)
  const vm = env.named('VM', 'staging-app')
  await env.pool.call('VM.add_to_other_config', [vm['_xapiRef'], INSTALLATION_MARK, 'someone-else'])
  const plain = await env.ops.perform(vm, 'snapshot', {}, context())
  t.equal(plain?.type, 'VM-snapshot')
  const snapshot = env.record(plain?.id ?? '')
  t.equal(snapshot['name_label'], vm['name_label'], 'named after the VM by default')
  t.notOk(INSTALLATION_MARK in (env.of(snapshot)['other_config'] as object), 'the VM’s mark is not inherited')

  const marked = await env.ops.perform(vm, 'snapshot', { name_label: 'nightly', other_config: { [INSTALLATION_MARK]: 'keel-1', 'keel:job': 'j1' } }, context())
  const record = env.record(marked?.id ?? '')
  t.equal(record['name_label'], 'nightly')
  t.match(env.of(record)['other_config'], { [INSTALLATION_MARK]: 'keel-1', 'keel:job': 'j1' })
  t.equal(env.of(record)['snapshot_of'], vm['_xapiRef'])

  const clone = await env.ops.perform(vm, 'clone', {}, context())
  t.equal(clone?.type, 'VM')
  t.equal(env.record(clone?.id ?? '')['name_label'], `${String(vm['name_label'])} (clone)`)
  t.same(env.refs('task'), [])
})

t.test('revert_snapshot reverts to a snapshot of the VM and refuses another VM’s', async (t) => {
  const env = await setup(t)
  const vm = env.named('VM', 'web-02')
  const snapshot = env.named('VM-snapshot', 'web-02 before nginx upgrade')
  const foreign = env.named('VM-snapshot', 'db-01 pre-migration')
  const before = env.of(vm)
  const error = await failure(env.ops.perform(vm, 'revert_snapshot', { snapshotId: foreign.id }, context()))
  t.equal(error.code, 'INVALID_PARAMETERS')
  t.match(error.data, { errors: [{ path: 'body.snapshotId' }] })
  t.equal(env.of(vm), before, 'nothing changed')
  await env.ops.perform(vm, 'hard_shutdown', {}, context())
  await env.ops.perform(vm, 'revert_snapshot', { snapshotId: snapshot.id }, context())
  t.equal(env.record(vm.id)['parent'], snapshot.id, 'the VM now derives from the snapshot')
  const running = env.named('VM', 'web-01')
  const live = await env.ops.perform(running, 'snapshot', {}, context())
  await env.ops.perform(running, 'revert_snapshot', { snapshotId: live?.id }, context())
  t.equal(env.record(running.id)['parent'], live?.id)
  t.equal(env.of(running)['power_state'], 'Running', 'a VM snapshotted while running runs again')
  t.same(env.refs('task'), [])
})

t.test('host and SR actions', async (t) => {
  const env = await setup(t)
  const host = env.named('host', 'xcp-ng-03')
  await env.ops.perform(host, 'disable', {}, context())
  t.equal(env.of(host)['enabled'], false)
  await env.ops.perform(host, 'enable', {}, context())
  t.equal(env.of(host)['enabled'], true)
  // The other hosts cannot take every guest of xcp-ng-01: the reboot fails before it starts, the host enabled again.
  const full = env.named('host', 'xcp-ng-01')
  const refused = await failure(env.ops.perform(full, 'clean_reboot', {}, context()))
  t.same([refused.code, refused.data?.['code']], ['XAPI_ERROR', 'NO_HOSTS_AVAILABLE'])
  t.equal(env.of(full)['enabled'], true, 'enabled again')
  const busy = env.named('host', 'xcp-ng-02')
  t.ok((env.of(busy)['resident_VMs'] as unknown[]).length > 1, 'the host has guests')
  await env.ops.perform(busy, 'clean_reboot', {}, context())
  const running = (env.of(busy)['resident_VMs'] as string[]).filter((ref) => env.xapi(ref)['is_control_domain'] !== true && env.xapi(ref)['power_state'] === 'Running')
  t.same(running, [], 'the running guests were evacuated first')
  const sr = env.named('SR', 'NFS shared storage')
  await env.ops.perform(sr, 'scan', {}, context())
  t.same(env.refs('task'), [])
})

t.test('pool actions: an emergency shutdown powers everything off, the master last; a rolling reboot takes the hosts in turn, its pinned guests stopped and started again', async (t) => {
  const env = await setup(t)
  const pool = env.named('pool', 'Demo pool')
  const live = (): boolean[] => env.refs('host').map((ref) => env.xapi(String(env.xapi(ref)['metrics']))['live'] as boolean)
  const guestsUp = (): string[] =>
    env.refs('VM').filter((ref) => {
      const vm = env.xapi(ref)
      return vm['is_control_domain'] !== true && vm['is_a_template'] !== true && vm['power_state'] !== 'Halted'
    })

  // Guests on a host's local storage cannot move: they are shut down around its reboot and started again on it.
  const pinnedRefs = guestsUp().filter((ref) =>
    (env.xapi(ref)['VBDs'] as string[]).some((vbd) => {
      const vdi = String(env.xapi(vbd)['VDI'])
      return vdi !== 'OpaqueRef:NULL' && env.xapi(String(env.xapi(vdi)['SR']))['shared'] !== true
    }),
  )
  t.ok(pinnedRefs.length > 0, 'some guests are pinned to their host')
  const before = guestsUp().sort()
  const residence = pinnedRefs.map((ref) => env.xapi(ref)['resident_on'])
  const ctx = context()
  await env.ops.perform(pool, 'rolling_reboot', {}, ctx)
  t.same(live(), env.refs('host').map(() => true), 'every host back')
  t.same(env.refs('host').map((ref) => env.xapi(ref)['enabled']), env.refs('host').map(() => true), 'and enabled')
  t.same(guestsUp().sort(), before, 'every guest up again')
  t.same(pinnedRefs.map((ref) => env.xapi(ref)['resident_on']), residence, 'the pinned ones on their host')
  t.ok(ctx.reported.every((p, i) => p >= (ctx.reported[i - 1] ?? 0) && p <= 100), 'progress rising')

  await env.ops.perform(env.named('VM', 'staging-app'), 'start', {}, context())
  await env.ops.perform(pool, 'emergency_shutdown', {}, context())
  t.same(guestsUp(), [], 'every guest powered off')
  t.same(live(), env.refs('host').map(() => false), 'every host down')
  t.same(env.refs('task'), [])
})

t.test('an aborted operation cancels its XAPI task: ABORTED, and the VM as it was', async (t) => {
  const env = await setup(t, 200)
  const vm = env.named('VM', 'staging-app')
  const ctx = context()
  const progressed = new Promise<void>((resolve) => {
    ctx.progress = (percent) => {
      ctx.reported.push(percent)
      if (percent > 0) resolve()
    }
  })
  const running = env.ops.perform(vm, 'start', {}, ctx)
  await progressed
  ctx.controller.abort()
  const error = await failure(running)
  t.equal(error.code, 'ABORTED')
  t.equal(env.of(vm)['power_state'], 'Halted')
  t.same(env.refs('task'), [], 'the cancelled task destroyed')
})

t.test('PATCH sets every field or none', async (t) => {
  const env = await setup(t)
  const vm = env.named('VM', 'staging-app')
  await env.ops.update(vm, { nameLabel: 'renamed', notes: 'hello', autoPoweron: true, tags: ['a', 'a', 'b'] })
  const record = env.of(vm)
  t.equal(record['name_label'], 'renamed')
  t.same(record['tags'], ['a', 'b'])
  t.match(record['other_config'], { 'xo:notes': 'hello', auto_poweron: 'true' })
  await env.ops.update(vm, { autoPoweron: false, notes: '' })
  t.notOk('auto_poweron' in (env.of(vm)['other_config'] as object))
  t.notOk('xo:notes' in (env.of(vm)['other_config'] as object))

  const before = env.of(vm)
  const bad = await failure(env.ops.update(vm, { nameLabel: '', notes: 'x', cpus: 0 }))
  t.equal(bad.code, 'INVALID_PARAMETERS')
  t.same((bad.data?.['errors'] as Array<{ path: string }>).map((e) => e.path), ['body.nameLabel', 'body.cpus'])
  t.equal(env.of(vm), before, 'a bad field changes nothing')

  const running = env.named('VM', 'web-01')
  const runningBefore = env.of(running)
  const tooMany = await failure(env.ops.update(running, { cpus: Number(runningBefore['VCPUs_max']) + 1 }))
  t.equal(tooMany.code, 'INVALID_PARAMETERS')
  const suspended = env.named('VM', 'win11-desktop')
  const state = await failure(env.ops.update(suspended, { cpus: 2 }))
  t.same([state.code, state.data?.['actual']], ['INCORRECT_STATE', 'Suspended'])

  await env.ops.update(vm, { cpus: 3 })
  t.match(env.of(vm), { VCPUs_max: 3, VCPUs_at_startup: 3 })
  await env.ops.update(vm, { cpus: 1, memory: 2 * 1024 ** 3 })
  t.match(env.of(vm), { VCPUs_max: 1, VCPUs_at_startup: 1, memory_static_max: 2 * 1024 ** 3, memory_dynamic_min: 2 * 1024 ** 3, memory_dynamic_max: 2 * 1024 ** 3 })

  // A host without VM.set_VCPUs_max: the rename done before it is taken back, and the answer is the reference's 501.
  const renamed = env.of(vm)
  const refused = await failure(lacking(env, ['VM.set_VCPUs_max']).update(vm, { nameLabel: 'again', cpus: 8 }))
  t.same([refused.code, refused.data], ['NOT_IMPLEMENTED', { code: 'MESSAGE_METHOD_UNKNOWN', params: ['VM.set_VCPUs_max'] }])
  t.equal(env.of(vm)['name_label'], renamed['name_label'], 'the fields set before the failure were taken back')
  t.equal(env.of(vm)['VCPUs_at_startup'], renamed['VCPUs_at_startup'])
})

t.test('PATCH of a VDI: a size that only grows, applied after every field that can be taken back', async (t) => {
  const env = await setup(t)
  const vdi = env.named('VDI', 'db-02 data')
  const size = Number(env.of(vdi)['virtual_size'])
  await env.ops.update(vdi, { size: size + 2 * 1024 * 1024 })
  t.equal(Number(env.of(vdi)['virtual_size']), size + 2 * 1024 * 1024)
  const before = env.of(vdi)
  const shrink = await failure(env.ops.update(vdi, { size: 1 }))
  t.same([shrink.code, shrink.data], ['INVALID_PARAMETERS', { errors: [{ path: 'body.size', message: `a disk can only grow: it has ${size + 2 * 1024 * 1024} bytes` }] }])
  t.equal(env.of(vdi), before, 'nothing changed')
  // On a host without VDI.set_name_label the resize, which cannot be taken back, never runs.
  const refused = await failure(lacking(env, ['VDI.set_name_label']).update(vdi, { size: size + 4 * 1024 * 1024, name_label: 'renamed' }))
  t.same([refused.code, refused.data?.['code']], ['NOT_IMPLEMENTED', 'MESSAGE_METHOD_UNKNOWN'])
  t.equal(env.of(vdi), before, 'nothing changed')
  await env.ops.update(vdi, { size: size + 4 * 1024 * 1024, name_label: 'renamed' })
  t.match(env.of(vdi), { virtual_size: size + 4 * 1024 * 1024, name_label: 'renamed' })
  const network = env.named('network', 'VM network')
  await env.ops.update(network, { name_description: 'guests' })
  t.equal(env.of(network)['name_description'], 'guests')
})

t.test('tags are added and removed with add_tags and remove_tags', async (t) => {
  const env = await setup(t)
  for (const object of [env.named('VM', 'web-01'), env.named('host', 'xcp-ng-01'), env.named('SR', 'NFS shared storage'), env.named('VDI', 'db-02 data')]) {
    await env.ops.setTag(object, 'keel-test', true)
    t.ok((env.of(object)['tags'] as string[]).includes('keel-test'), `${object.type} tagged`)
    await env.ops.setTag(object, 'keel-test', true)
    t.equal((env.of(object)['tags'] as string[]).filter((tag) => tag === 'keel-test').length, 1, 'once')
    await env.ops.setTag(object, 'keel-test', false)
    t.notOk((env.of(object)['tags'] as string[]).includes('keel-test'), `${object.type} untagged`)
  }
})

t.test('destroy: a VM goes with its snapshots and the disks only it used; a VDI alone', async (t) => {
  const env = await setup(t)
  const vm = env.named('VM', 'web-02')
  const record = env.of(vm)
  const vbds = (record['VBDs'] as string[]).map((ref) => env.xapi(ref))
  const disks = vbds.filter((vbd) => vbd['type'] === 'Disk').map((vbd) => String(vbd['VDI']))
  t.ok(disks.length > 0 && (record['snapshots'] as unknown[]).length > 0)
  const ctx = context()
  await env.ops.destroy(vm, ctx)
  const left = new Set([...env.refs('VM'), ...env.refs('VDI')])
  t.notOk(left.has(String(vm['_xapiRef'])), 'the VM is gone')
  for (const snapshot of record['snapshots'] as string[]) t.notOk(left.has(snapshot), 'its snapshots are gone')
  for (const disk of disks) t.notOk(left.has(disk), 'its disks are gone')
  t.equal(ctx.reported.at(-1), 100)

  const attached = env.named('VDI', 'db-02 data')
  const inUse = await failure(env.ops.destroy(attached, context()))
  t.equal(inUse.code, 'XAPI_ERROR', 'a disk a running VM uses stays')
  t.ok(env.refs('VDI').includes(String(attached['_xapiRef'])))
  const halted = env.xapi(String(env.named('VM', 'staging-app')['_xapiRef']))
  const vdiRef = (halted['VBDs'] as string[]).map((ref) => env.xapi(ref)).find((vbd) => vbd['type'] === 'Disk')?.['VDI']
  const vdi = env.sim.simulator.services.feed.labRecord(String(vdiRef))
  if (vdi === undefined) throw new Error('staging-app has no disk')
  await env.ops.destroy(vdi, context())
  t.notOk(env.refs('VDI').includes(String(vdiRef)))
  t.same(env.refs('task'), [])
})

t.test('destroy of a network: refused while a VIF on it is plugged or a PIF is on it, as the lab refuses one in use; an unused one goes', async (t) => {
  const env = await setup(t)
  const used = env.named('network', 'VM network')
  const before = env.of(used)
  const inUse = await failure(env.ops.destroy(used, context()))
  t.same([inUse.code, inUse.data?.['property'], inUse.data?.['object']], ['INCORRECT_STATE', 'VIFs attached', used.id])
  t.equal(env.of(used), before, 'nothing changed')

  const driver = env.sim.simulator.services.driver
  const pool = [...driver.objectsOfType('pool')][0]
  if (pool === undefined) throw new Error('no pool')
  const made = await driver.perform(pool, 'create_internal_network', { name: 'scratch' }, context())
  const scratch = driver.getObject(made?.id ?? '')
  if (scratch === undefined) throw new Error('no network made')
  await env.ops.destroy(scratch, context())
  t.notOk(env.refs('network').includes(String(scratch['_xapiRef'])), 'the network is gone')
  t.same(env.refs('task'), [])
})

t.test('XAPI failures answered as Keel’s', async (t) => {
  const env = await setup(t)
  const vm = env.named('VM', 'web-01')
  const stale = new XapiOperations({ ...env.locator, locate: () => ({ pool: env.pool, ref: 'OpaqueRef:gone', cls: 'VM' }) }, env.index)
  const gone = await failure(stale.perform(vm, 'pause', {}, context()))
  t.same([gone.code, gone.data], ['NO_SUCH_OBJECT', { id: vm.id, type: 'VM' }])
  const nowhere = new XapiOperations({ ...env.locator, locate: () => undefined }, env.index)
  t.equal((await failure(nowhere.update(vm, { nameLabel: 'x' }))).code, 'NO_SUCH_OBJECT')
  t.equal((await failure(env.ops.perform(vm, 'no_such_action', {}, context()))).code, 'NO_SUCH_OBJECT')
  const template = env.named('VM-template', 'Debian Bookworm 12')
  t.equal((await failure(env.ops.perform(template, 'start', {}, context()))).code, 'NO_SUCH_OBJECT', 'templates have no actions')
  const aborted = context()
  aborted.controller.abort()
  t.equal((await failure(env.ops.perform(vm, 'pause', {}, aborted))).code, 'ABORTED')
  t.equal(env.of(vm)['power_state'], 'Running')
})

t.test('the mapping table', async (t) => {
  const vm = { id: 'vm-1', type: 'VM' }
  t.match(keelErrorOf(new XapiError('VM_BAD_POWER_STATE', ['OpaqueRef:x', 'halted', 'running']), { object: vm }), {
    code: 'INCORRECT_STATE',
    data: { actual: 'Running', expected: 'Halted', object: 'vm-1', property: 'power_state' },
  })
  t.match(keelErrorOf(new XapiError('HANDLE_INVALID', ['VDI', 'OpaqueRef:y'])), { code: 'NO_SUCH_OBJECT', data: { id: 'OpaqueRef:y', type: 'VDI' } })
  t.match(keelErrorOf(new XapiError('UUID_INVALID', ['VM', 'u'])), { code: 'NO_SUCH_OBJECT' })
  t.match(keelErrorOf(new XapiError('TASK_CANCELLED', ['OpaqueRef:t'])), { code: 'ABORTED' })
  t.match(keelErrorOf(new XapiError('SR_FULL', ['1', '2'])), { code: 'XAPI_ERROR', data: { code: 'SR_FULL', params: ['1', '2'] } })
  const network = { id: 'net-1', type: 'network' }
  t.match(keelErrorOf(new XapiError('NETWORK_CONTAINS_VIF', ['OpaqueRef:a', 'OpaqueRef:b']), { object: network }), {
    code: 'INCORRECT_STATE',
    data: { actual: 2, expected: 0, object: 'net-1', property: 'VIFs attached' },
  })
  t.match(keelErrorOf(new XapiError('NETWORK_CONTAINS_PIF', ['OpaqueRef:p']), { object: network }), { code: 'INCORRECT_STATE', data: { actual: 1, property: 'PIFs' } })
  t.match(keelErrorOf(new XapiError('MESSAGE_METHOD_UNKNOWN', ['VM.set_bios_strings'])), {
    code: 'NOT_IMPLEMENTED',
    data: { code: 'MESSAGE_METHOD_UNKNOWN', params: ['VM.set_bios_strings'] },
  })
  const other = new Error('socket hang up')
  t.equal(keelErrorOf(other), other, 'anything else passes unchanged')
  t.ok(Object.keys(xapiCapabilities.actions).length > 0)
})
