import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import { CREATION_KEY, decodeCreation } from '../../src/driver/xapi/creation.js'
import { XapiOperations } from '../../src/driver/xapi/operations.js'
import { context, type TestScope } from '../helpers/lab.js'
import { simulatedPool, type SimulatedPool } from '../helpers/xapi-pool.js'
import { failure } from './fixtures/lab.js'

const GiB = 2 ** 30

interface Setup extends SimulatedPool {
  readonly ops: XapiOperations
  named(type: string, name: string): XoRecord
  /** the XAPI record behind a lab record */
  of(record: XoRecord): Readonly<Record<string, unknown>>
  /** how many lab objects of each type: proof that nothing was made or lost */
  counts(): Record<string, number>
}

async function setup(t: TestScope, stepDelay?: number): Promise<Setup> {
  const sim = await simulatedPool(t, stepDelay === undefined ? {} : { stepDelay })
  const driver = sim.sim.simulator.services.driver
  const named = (type: string, name: string): XoRecord => {
    const record = [...driver.objectsOfType(type)].find((candidate) => candidate['name_label'] === name)
    if (record === undefined) throw new Error(`no ${type} named ${name}`)
    return record
  }
  const counts = (): Record<string, number> => Object.fromEntries(['VM', 'VDI', 'VBD', 'VIF', 'network', 'host'].map((type) => [type, driver.countOfType(type)]))
  return { ...sim, ops: new XapiOperations(sim.locator, sim.index), named, of: (record) => sim.xapi(String(record['_xapiRef'])), counts }
}

const vdisOf = (env: Setup, vm: XoRecord): XoRecord[] =>
  (env.record(vm.id)['$VBDs'] as string[]).map((id) => env.record(id)).filter((vbd) => vbd['is_cd_drive'] === false).map((vbd) => env.record(String(vbd['VDI'])))

t.test('create_vm: from a template, with the disks and VIFs asked for, booted; without disks, the template’s own', async (t) => {
  const env = await setup(t)
  const pool = env.named('pool', 'Demo pool')
  const template = env.named('VM-template', 'Debian Bookworm 12')
  const sr = String(pool['default_SR'])
  const network = [...env.sim.simulator.services.driver.objectsOfType('network')][0] as XoRecord
  const ctx = context()
  const made = await env.ops.perform(pool, 'create_vm', {
    name_label: 'made',
    name_description: 'by the driver',
    template: template.id,
    vdis: [{ name_label: 'root', size: 2 * GiB, sr }],
    vifs: [{ network: network.id, mac: '02:00:00:00:00:AB' }],
    boot: true,
  }, ctx)
  t.equal(made?.type, 'VM')
  const vm = env.record(made?.id ?? '')
  t.match(env.of(vm), { name_label: 'made', name_description: 'by the driver', power_state: 'Running', is_a_template: false })
  t.match(vdisOf(env, vm), [{ name_label: 'root', size: 2 * GiB, $SR: sr }])
  t.match((vm['VIFs'] as string[]).map((id) => env.record(id)), [{ $network: network.id, MAC: '02:00:00:00:00:ab', device: '0' }])
  t.ok(ctx.reported.every((p, i) => p >= (ctx.reported[i - 1] ?? 0) && p <= 100), 'progress rising')

  const plain = env.record((await env.ops.perform(pool, 'create_vm', { name_label: 'plain', template: template.id }, context()))?.id ?? '')
  const disks = (template['template_info'] as { disks: Array<{ size: number }> }).disks
  t.same(vdisOf(env, plain).map((vdi) => vdi['size']), disks.map((disk) => disk.size), 'the template’s disks, provisioned')
  t.match(env.of(plain), { power_state: 'Halted', name_description: '' }, 'not the template’s description')
  const creation = decodeCreation((env.of(plain)['other_config'] as Record<string, string>)[CREATION_KEY])
  t.match(creation, { user: context().userId, creator: context().userId, template: template.id }, 'who made it, from which template, kept in other_config as XAPI has no such field')
  t.same(env.refs('task'), [], 'every XAPI task destroyed')
})

t.test('create_vm refuses what it names wrongly before anything is made, and takes back a creation aborted midway', async (t) => {
  const env = await setup(t, 50)
  const pool = env.named('pool', 'Demo pool')
  const template = env.named('VM-template', 'Debian Bookworm 12')
  const iso = [...env.sim.simulator.services.driver.objectsOfType('SR')].find((sr) => sr['content_type'] === 'iso') as XoRecord
  const locals = [...env.sim.simulator.services.driver.objectsOfType('SR')].filter((sr) => sr['shared'] === false && sr['content_type'] !== 'iso')
  const [here, there] = locals.filter((sr, i) => locals.findIndex((other) => other['$container'] === sr['$container']) === i)
  if (here === undefined || there === undefined) throw new Error('the demo lab has local SRs on two hosts')
  const before = env.counts()
  const refusals: Array<[Record<string, unknown>, string, unknown]> = [
    [{ name_label: 'x', template: template.id, vdis: [{ name_label: 'a', size: GiB, sr: here.id }, { name_label: 'b', size: GiB, sr: there.id }] }, 'INVALID_PARAMETERS', { errors: [{ path: 'body.vdis' }] }],
    [{ name_label: 'x', template: 'no-such-template' }, 'NO_SUCH_OBJECT', { id: 'no-such-template', type: 'VM-template' }],
    [{ name_label: 'x', template: template.id, vdis: [{ name_label: 'd', size: GiB, sr: 'no-such-sr' }] }, 'NO_SUCH_OBJECT', { id: 'no-such-sr', type: 'SR' }],
    [{ name_label: 'x', template: template.id, vdis: [{ name_label: 'd', size: GiB, sr: iso.id }] }, 'INVALID_PARAMETERS', { errors: [{ path: 'body.vdis.0.sr' }] }],
    [{ name_label: 'x', template: template.id, vdis: [{ name_label: 'd', size: 2 ** 60 }] }, 'INVALID_PARAMETERS', { errors: [{ path: 'body.vdis.0.size' }] }],
    [{ name_label: 'x', template: template.id, vifs: [{ network: 'no-such-network' }] }, 'NO_SUCH_OBJECT', { id: 'no-such-network', type: 'network' }],
    [{ name_label: 'x', template: template.id, cpus: 'two' }, 'INVALID_PARAMETERS', { errors: [{ path: 'body.cpus' }] }],
  ]
  for (const [params, code, data] of refusals) {
    const error = await failure(env.ops.perform(pool, 'create_vm', params, context()))
    t.equal(error.code, code, JSON.stringify(params))
    t.match(error.data, data)
  }
  t.same(env.counts(), before, 'the refusals made nothing')

  const ctx = context()
  const cloned = new Promise<void>((resolve) => {
    ctx.progress = (percent) => {
      ctx.reported.push(percent)
      if (percent >= 20) resolve()
    }
  })
  const running = env.ops.perform(pool, 'create_vm', { name_label: 'aborted', template: template.id, vdis: [{ name_label: 'd', size: GiB }], boot: true }, ctx)
  await cloned
  ctx.controller.abort()
  t.equal((await failure(running)).code, 'ABORTED')
  t.same(env.counts(), before, 'the half-made VM taken back with its disk')
  t.same(env.refs('task'), [])
})

t.test('POST vdis, vbds and vifs; connect, disconnect and DELETE of devices, refused as the lab refuses them', async (t) => {
  const env = await setup(t)
  const running = env.named('VM', 'web-01')
  const halted = env.named('VM', 'staging-app')
  const pool = env.named('pool', 'Demo pool')
  const sr = String(pool['default_SR'])
  const network = [...env.sim.simulator.services.driver.objectsOfType('network')].find((candidate) => candidate['$pool'] === pool.id) as XoRecord
  const create = env.ops.create.bind(env.ops)

  const vdi = await create('VDI', { srId: sr, name_label: 'scratch', virtual_size: GiB }, context())
  t.match(env.record(vdi.id), { type: 'VDI', name_label: 'scratch', size: GiB, $SR: sr })
  const vbd = await create('VBD', { VM: running.id, VDI: vdi.id }, context())
  t.match(env.record(vbd.id), { VM: running.id, VDI: vdi.id, attached: false, is_cd_drive: false, read_only: false })
  const vif = await create('VIF', { vmId: running.id, networkId: network.id, device: '5', MTU: 9000 }, context())
  t.match(env.record(vif.id), { $VM: running.id, $network: network.id, device: '5', MTU: 9000, attached: false })
  const cd = await create('VBD', { VM: halted.id, type: 'CD' }, context())
  t.match(env.record(cd.id), { is_cd_drive: true, read_only: true, VDI: undefined })

  for (const [type, id] of [['VBD', vbd.id], ['VIF', vif.id]] as const) {
    const device = (): XoRecord => env.record(id)
    await env.ops.perform(device(), 'connect', {}, context())
    t.equal(device()['attached'], true, `${type} plugged`)
    t.match(await failure(env.ops.perform(device(), 'connect', {}, context())), { code: 'INCORRECT_STATE', data: { property: 'attached', actual: true, expected: false } })
    t.match(await failure(env.ops.destroy(device(), context())), { code: 'INCORRECT_STATE', data: { property: 'attached', actual: true } }, `a plugged ${type} is not destroyed`)
    await env.ops.perform(device(), 'disconnect', {}, context())
    t.equal(device()['attached'], false)
    await env.ops.destroy(device(), context())
    t.equal(env.sim.simulator.services.driver.getObject(id), undefined, `${type} gone`)
  }
  t.match(env.record(vdi.id), { $VBDs: [] }, 'the disk stays')

  const before = env.counts()
  const position = String(env.record(cd.id)['position'])
  const refusals: Array<[() => Promise<unknown>, string, unknown]> = [
    [() => env.ops.perform(env.record(cd.id), 'connect', {}, context()), 'INCORRECT_STATE', { property: 'power_state', expected: 'Running', actual: 'Halted' }],
    [() => create('VBD', { VM: halted.id, VDI: vdi.id, userdevice: position }, context()), 'OBJECT_ALREADY_EXISTS', { type: 'VBD', field: 'userdevice', value: position }],
    [() => create('VBD', { VM: halted.id }, context()), 'INVALID_PARAMETERS', { errors: [{ path: 'body.VDI' }] }],
    [() => create('VBD', { VM: halted.id, type: 'CD', mode: 'RW' }, context()), 'INVALID_PARAMETERS', { errors: [{ path: 'body.mode' }] }],
    [() => create('VBD', { VM: 'no-such-vm', VDI: vdi.id }, context()), 'NO_SUCH_OBJECT', { id: 'no-such-vm', type: 'VM' }],
    [() => create('VIF', { vmId: halted.id, networkId: 'no-such-network' }, context()), 'NO_SUCH_OBJECT', { id: 'no-such-network', type: 'network' }],
    [() => create('VDI', { srId: sr, name_label: 'x', virtual_size: 0 }, context()), 'INVALID_PARAMETERS', { errors: [{ path: 'body.virtual_size' }] }],
    [() => create('VDI', { srId: 'no-such-sr', name_label: 'x', virtual_size: 1 }, context()), 'NO_SUCH_OBJECT', { id: 'no-such-sr', type: 'SR' }],
  ]
  for (const [attempt, code, data] of refusals) t.match(await failure(attempt()), { code, data })
  t.same(env.counts(), before, 'the refusals changed nothing')
  t.same(env.refs('task'), [])
})

t.test('SR reclaim_space through the trim plugin; VDI migrate answers the copy on the new SR', async (t) => {
  const env = await setup(t)
  const driver = env.sim.simulator.services.driver
  const pool = env.named('pool', 'Demo pool')
  const sr = driver.getObject(String(pool['default_SR'])) as XoRecord
  await env.ops.perform(sr, 'reclaim_space', {}, context())
  const iso = [...driver.objectsOfType('SR')].find((candidate) => candidate['content_type'] === 'iso') as XoRecord
  t.match(await failure(env.ops.perform(iso, 'reclaim_space', {}, context())), { code: 'INCORRECT_STATE', data: { property: 'content_type', actual: 'iso' } })

  const vdi = [...driver.objectsOfType('VDI')].find((candidate) => candidate['$SR'] === sr.id) as XoRecord
  const local = [...driver.objectsOfType('SR')].find((candidate) => candidate['shared'] === false && candidate['content_type'] !== 'iso') as XoRecord
  t.match(await failure(env.ops.perform(vdi, 'migrate', { srId: sr.id }, context())), { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.srId' }] } })
  t.match(await failure(env.ops.perform(vdi, 'migrate', { srId: iso.id }, context())), { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.srId' }] } })
  t.equal(env.record(vdi.id)['$SR'], sr.id, 'the refusals moved nothing')
  const moved = await env.ops.perform(vdi, 'migrate', { srId: local.id }, context())
  t.equal(moved?.type, 'VDI')
  t.not(moved?.id, vdi.id, 'a new id')
  t.match(env.record(moved?.id ?? ''), { $SR: local.id, size: vdi['size'] })
  t.equal(driver.getObject(vdi.id), undefined)
  t.same(env.refs('task'), [])
})

t.test('host maintenance: the toolstack, the NICs, the management interface, the two ways down with the guests, leaving the pool', async (t) => {
  const env = await setup(t)
  const driver = env.sim.simulator.services.driver
  const host = env.named('host', 'xcp-ng-02')
  const guests = (): string[] =>
    (env.of(host)['resident_VMs'] as string[]).filter((ref) => env.xapi(ref)['is_control_domain'] !== true && env.xapi(ref)['power_state'] === 'Running').sort()
  const up = guests()
  t.ok(up.length > 0, 'the host has running guests')

  const agentStart = env.record(host.id)['agentStartTime']
  await env.ops.perform(host, 'restart_toolstack', {}, context())
  t.ok(Number(env.record(host.id)['agentStartTime']) >= Number(agentStart))
  await env.ops.perform(host, 'scan_pifs', {}, context())
  t.same(guests(), up, 'the guests kept running')

  const pifs = [...driver.objectsOfType('PIF')]
  const target = pifs.find((pif) => pif['$host'] === host.id && pif['management'] !== true && pif['attached'] === true) as XoRecord
  const foreign = pifs.find((pif) => pif['$host'] !== host.id) as XoRecord
  t.match(await failure(env.ops.perform(host, 'management_reconfigure', { pif: foreign.id }, context())), { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.pif' }] } })
  await env.ops.perform(host, 'management_reconfigure', { pif: target.id }, context())
  t.same(pifs.filter((pif) => pif['$host'] === host.id && env.record(pif.id)['management'] === true).map((pif) => pif.id), [target.id])

  await env.ops.perform(host, 'smart_reboot', {}, context())
  t.same(guests(), up, 'the guests suspended and resumed on the host')
  t.equal(env.of(host)['enabled'], true)

  const master = env.named('host', 'xcp-ng-01')
  t.match(await failure(env.ops.perform(master, 'detach', {}, context())), { code: 'INCORRECT_STATE', data: { property: 'master', actual: true } })
  t.match(await failure(env.ops.perform(host, 'detach', {}, context())), { code: 'INCORRECT_STATE', data: { property: '$container', actual: host.id } })
  t.match(await failure(env.ops.perform(host, 'forget', {}, context())), { code: 'INCORRECT_STATE', data: { property: 'power_state', actual: 'Running', expected: 'Halted' } })
  t.ok(driver.getObject(host.id), 'the refusals left it in the pool')

  await env.ops.perform(host, 'emergency_shutdown', {}, context())
  t.equal(env.record(host.id)['power_state'], 'Halted')
  for (const ref of up) t.equal(env.xapi(ref)['power_state'], 'Halted', 'its guests powered off')
  for (const action of ['restart_toolstack', 'scan_pifs', 'smart_reboot', 'emergency_shutdown']) {
    t.match(await failure(env.ops.perform(env.record(host.id), action, {}, context())), { code: 'INCORRECT_STATE', data: { property: 'power_state', actual: 'Halted', expected: 'Running' } }, action)
  }
  t.same(env.refs('task'), [])
})

t.test('DELETE of a template: a custom one goes with its drives, a default one is refused', async (t) => {
  const env = await setup(t)
  const lab = env.sim.simulator.services.driver
  const shipped = env.named('VM-template', 'Debian Bookworm 12')
  t.match(await failure(env.ops.destroy(shipped, context())), { code: 'INCORRECT_STATE', data: { property: 'isDefaultTemplate', actual: true } })
  t.ok(lab.getObject(shipped.id), 'still there')
  const staging = env.named('VM', 'staging-app')
  lab.applyChanges([{ kind: 'update', object: { ...staging, type: 'VM-template', isDefaultTemplate: false } }])
  const custom = env.record(staging.id)
  const vbds = custom['$VBDs'] as string[]
  t.ok(vbds.length > 0)
  await env.ops.destroy(custom, context())
  t.equal(lab.getObject(staging.id), undefined)
  for (const vbd of vbds) t.equal(lab.getObject(vbd), undefined, 'its drives went with it')
})

t.test('create_internal_network: a network with no PIF, its bridge picked by the pool', async (t) => {
  const env = await setup(t)
  const pool = env.named('pool', 'Demo pool')
  const made = await env.ops.perform(pool, 'create_internal_network', { name: 'inside', description: 'VM to VM', mtu: 9000 }, context())
  t.equal(made?.type, 'network')
  t.match(env.record(made?.id ?? ''), { name_label: 'inside', name_description: 'VM to VM', MTU: 9000, PIFs: [], $pool: pool.id })
})
