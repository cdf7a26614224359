import t from 'tap'
import type { HostRecord, VmRecord } from '../../src/model/records.js'
import { context, openLab } from '../helpers/lab.js'
import { act, current, failure, field, named, problems, progressComplete, SAMPLES, TRANSITIONS, type State } from './fixtures/lab.js'
import { TWO_POOLS } from './fixtures/specs.js'

t.test('the seeded demo lab is consistent', async (t) => {
  const { driver } = await openLab(t)
  t.same(problems(driver), [])
})

t.test('every VM action in every power state: the allowed ones and the refused ones', async (t) => {
  for (const [action, { from, to }] of Object.entries(TRANSITIONS)) {
    const { driver, changes } = await openLab(t)
    for (const [state, name] of Object.entries(SAMPLES) as Array<[State, string]>) {
      const vm = named(driver, 'VM', name)
      // migrate needs a host other than the VM's own
      const other = [...driver.objectsOfType('host')].find((host) => host.id !== vm['$container'])
      const params = action === 'migrate' ? { hostId: other?.id } : {}
      const ctx = context()
      const before = changes.length
      if (!from.includes(state)) {
        const error = await failure(act(driver, vm, action, params, ctx))
        t.equal(error.code, 'INCORRECT_STATE', `${action} on ${state}: refused`)
        t.same(error.data, { actual: state, expected: from.length === 1 ? from[0] : from, object: vm.id, property: 'power_state' })
        t.equal(changes.length, before, `${action} on ${state}: nothing changed`)
        t.same(ctx.reported, [])
        continue
      }
      const created = await act(driver, vm, action, params, ctx)
      const after = current(driver, vm.id)
      if (to !== undefined) t.equal(after['power_state'], to, `${action} on ${state} → ${to}`)
      if (action === 'migrate') t.equal(after['$container'], other?.id, `${action} on ${state}: moved`)
      if (action === 'clone') t.same(created?.type, 'VM')
      t.ok(changes.length > before, `${action} on ${state}: listeners saw the change`)
      t.ok(progressComplete(ctx.reported), `${action} on ${state}: progress ${ctx.reported.join(' ')}`)
      t.same(problems(driver), [], `${action} on ${state}: consistent`)
    }
  }
})

t.test('start places the VM, gives it addresses and the guest data; halting clears them', async (t) => {
  const { driver } = await openLab(t)
  const hosts = (): HostRecord[] => [...driver.objectsOfType('host')] as HostRecord[]
  const free = (host: HostRecord): number => host.memory.size - host.memory.usage
  const roomiest = hosts().sort((a, b) => free(b) - free(a))[0]
  const staging = named(driver, 'VM', 'staging-app')
  await act(driver, staging, 'start')
  let vm = current(driver, staging.id) as VmRecord
  t.equal(vm.$container, roomiest?.id, 'on the host with the most free memory')
  t.ok(field<string[]>(current(driver, vm.$container), 'residentVms').includes(vm.id))
  t.match(vm.addresses, { '0/ipv4/0': /^10\.0\.1\.\d+$/ }, 'an address in its network')
  t.equal(vm.mainIpAddress, vm.addresses['0/ipv4/0'])
  t.match(vm.os_version, { distro: 'debian' }, 'the agent reports the template OS')
  t.equal(vm.pvDriversDetected, true)
  t.ok(Number.isInteger(vm.startTime) && (vm.startTime ?? 0) < Date.now() / 1000, 'startTime in seconds')
  t.ok((vm.memory.usage ?? 0) > 0 && (vm.memory.usage ?? 0) <= vm.memory.size)

  await act(driver, staging, 'clean_shutdown')
  vm = current(driver, staging.id) as VmRecord
  t.same([vm.addresses, vm.mainIpAddress, vm.startTime, vm.os_version, vm.$container], [{}, undefined, null, null, vm.$pool])
  t.same(problems(driver), [])

  const sandbox = named(driver, 'VM', 'dev-sandbox')
  const localHost = named(driver, 'host', 'xcp-ng-02')
  await act(driver, sandbox, 'start')
  t.equal(current(driver, sandbox.id)['$container'], localHost.id, 'a VM on local storage starts on that host')
  t.same(problems(driver), [])
})

t.test('start on a chosen host checks it', async (t) => {
  const { driver } = await openLab(t)
  const erp = named(driver, 'VM', 'legacy-erp')
  const [h1, h2, h3] = ['xcp-ng-01', 'xcp-ng-02', 'xcp-ng-03'].map((name) => named(driver, 'host', name))
  if (h1 === undefined || h2 === undefined || h3 === undefined) throw new Error('demo hosts')

  await act(driver, h2, 'disable')
  const disabled = await failure(act(driver, erp, 'start', { hostId: h2.id }))
  t.same([disabled.code, disabled.data], ['INCORRECT_STATE', { actual: false, expected: true, object: h2.id, property: 'enabled' }])

  await driver.update(erp, { memory: 120 * 2 ** 30 })
  const small = await failure(act(driver, erp, 'start', { hostId: h3.id }))
  t.equal(small.code, 'INVALID_PARAMETERS', 'not enough memory on the chosen host')
  t.match(small.data, { errors: [{ path: 'body.hostId', message: /memory free/ }] })

  const sandbox = named(driver, 'VM', 'dev-sandbox')
  const pinned = await failure(act(driver, sandbox, 'start', { hostId: h1.id }))
  t.match(pinned.data, { errors: [{ path: 'body.hostId', message: /local SR/ }] })

  await driver.update(erp, { memory: 250 * 2 ** 30 })
  const nowhere = await failure(act(driver, erp, 'start'))
  t.match([nowhere.code, nowhere.data], ['INCORRECT_STATE', { property: 'free memory', expected: 250 * 2 ** 30 }])

  await driver.update(erp, { memory: 16 * 2 ** 30 })
  await act(driver, erp, 'start', { hostId: h3.id })
  t.equal(current(driver, erp.id)['$container'], h3.id)
  t.same(problems(driver), [])
})

t.test('hosts of another pool, and halted hosts, are refused', async (t) => {
  const { driver } = await openLab(t, { spec: TWO_POOLS })
  const spare = named(driver, 'VM', 'spare-user')
  const b1 = named(driver, 'host', 'b1')
  const a2 = named(driver, 'host', 'a2')
  const elsewhere = await failure(act(driver, spare, 'start', { hostId: b1.id }))
  t.match(elsewhere.data, { errors: [{ path: 'body.hostId', message: /not in the VM's pool/ }] })
  await act(driver, named(driver, 'VM', 'big'), 'hard_shutdown')
  await act(driver, a2, 'clean_shutdown')
  const down = await failure(act(driver, spare, 'start', { hostId: a2.id }))
  t.same(down.data, { actual: 'Halted', expected: 'Running', object: a2.id, property: 'power_state' })
  await act(driver, spare, 'start')
  // Nothing in the records shows that network's subnet: the lab derives a stable private one.
  t.match(current(driver, spare.id)['addresses'], { '0/ipv4/0': /^10\.\d+\.\d+\.100$/ })
  const copy = await act(driver, spare, 'hard_shutdown').then(() => act(driver, spare, 'clone'))
  await act(driver, spare, 'start')
  await act(driver, current(driver, copy?.id ?? ''), 'start')
  const [first, second] = [spare.id, copy?.id ?? ''].map((id) => field<Record<string, string>>(current(driver, id), 'addresses')['0/ipv4/0'])
  t.equal(second?.replace(/\.101$/, '.100'), first, 'the next VM gets the next address')
  t.same(problems(driver), [])
})

t.test('migrate moves a live VM with its memory; it stays within reach of its disks', async (t) => {
  const { driver } = await openLab(t)
  const web = named(driver, 'VM', 'web-01')
  const [h1, h3] = ['xcp-ng-01', 'xcp-ng-03'].map((name) => named(driver, 'host', name))
  if (h1 === undefined || h3 === undefined) throw new Error('demo hosts')
  const usage = (id: string): number => field<{ usage: number }>(current(driver, id), 'memory').usage
  const [before1, before3] = [usage(h1.id), usage(h3.id)]
  const addresses = web['addresses']
  await act(driver, web, 'migrate', { hostId: h3.id })
  const size = field<{ size: number }>(web, 'memory').size
  t.same([usage(h1.id), usage(h3.id)], [before1 - size, before3 + size])
  t.same(current(driver, web.id)['addresses'], addresses, 'addresses survive a live migration')
  t.same(current(driver, web.id)['startTime'], web['startTime'])

  const same = await failure(act(driver, web, 'migrate', { hostId: h3.id }))
  t.match(same.data, { errors: [{ path: 'body.hostId', message: /already runs/ }] })
  const db = named(driver, 'VM', 'db-01')
  const local = await failure(act(driver, db, 'migrate', { hostId: h3.id }))
  t.match(local.data, { errors: [{ path: 'body.hostId', message: /local SR/ }] })
  t.same(problems(driver), [])
})

t.test('resume goes back to its host; reboot keeps the addresses', async (t) => {
  const { driver } = await openLab(t)
  const desktop = named(driver, 'VM', 'win11-desktop')
  await act(driver, desktop, 'resume')
  const resumed = current(driver, desktop.id)
  t.equal(resumed['$container'], desktop['$container'])
  t.match(resumed['os_version'], { distro: 'windows', name: /Windows 11/ }, 'the template name tells Windows editions apart')
  const web = named(driver, 'VM', 'web-01')
  await act(driver, web, 'clean_reboot')
  const rebooted = current(driver, web.id)
  t.same(rebooted['addresses'], web['addresses'])
  t.ok(field<number>(rebooted, 'startTime') > field<number>(web, 'startTime'), 'a new start time')
  t.same(problems(driver), [])
})

t.test('an aborted operation leaves the state it found', async (t) => {
  const { driver, changes } = await openLab(t, { stepDelay: 20 })
  const staging = named(driver, 'VM', 'staging-app')
  const ctx = context()
  // Aborted at its first progress report: part-way, however slowly its steps run.
  const started = act(driver, staging, 'start', {}, { ...ctx, progress: (percent) => {
    ctx.progress(percent)
    ctx.controller.abort()
  } })
  const error = await failure(started)
  t.equal(error.code, 'ABORTED')
  t.ok(ctx.reported.length > 0 && (ctx.reported.at(-1) ?? 100) < 100, 'stopped part-way')
  t.equal(current(driver, staging.id), staging, 'the very same record')
  t.same(changes, [])

  const early = context()
  early.controller.abort()
  t.equal((await failure(act(driver, staging, 'start', {}, early))).code, 'ABORTED', 'an aborted signal stops it before the first step')
  t.same(changes, [])
  t.same(problems(driver), [])
})

t.test('the state is re-checked when the change happens', async (t) => {
  const { driver } = await openLab(t, { stepDelay: 5 })
  const staging = named(driver, 'VM', 'staging-app')
  const [first, second] = [act(driver, staging, 'start'), act(driver, staging, 'start')]
  await first
  const error = await failure(second)
  t.same(error.data, { actual: 'Running', expected: 'Halted', object: staging.id, property: 'power_state' })
  t.same(problems(driver), [])
})

t.test('a change is durable, and listeners see every record it touches', async (t) => {
  const first = await openLab(t, { keep: true })
  const web = named(first.driver, 'VM', 'web-01')
  await act(first.driver, web, 'hard_shutdown')
  const touched = new Set(first.changes.map((change) => change.object.type))
  t.same([...touched].sort(), ['VBD', 'VIF', 'VM', 'host'])
  t.ok(first.changes.every((change) => change.kind === 'update' && change.previous !== undefined))
  const after = current(first.driver, web.id)
  await first.driver.close()
  first.db.close()
  const second = await openLab(t, { dataDir: first.dataDir })
  t.same(second.driver.getObject(web.id), after)
  t.same(problems(second.driver), [])
})
