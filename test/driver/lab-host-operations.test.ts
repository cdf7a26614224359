import t from 'tap'
import type { LabDriver } from '../../src/driver/lab/driver.js'
import type { HostRecord } from '../../src/model/records.js'
import { context, openLab } from '../helpers/lab.js'
import { act, checkingContext, current, failure, field, named, problems, progressComplete } from './fixtures/lab.js'
import { crowdedHost, TWO_POOLS } from './fixtures/specs.js'

const hostOf = (driver: LabDriver, id: string): HostRecord => current(driver, id) as HostRecord

t.test('disable and enable are idempotent and need a running host', async (t) => {
  const { driver, changes } = await openLab(t)
  const host = named(driver, 'host', 'xcp-ng-03')
  await act(driver, host, 'disable')
  t.equal(hostOf(driver, host.id).enabled, false)
  const count = changes.length
  await act(driver, host, 'disable')
  t.equal(changes.length, count, 'disabling a disabled host changes nothing')
  await act(driver, host, 'enable')
  t.equal(hostOf(driver, host.id).enabled, true)
  const refused = await failure(act(driver, host, 'start'))
  t.same(refused.data, { actual: 'Running', expected: 'Halted', object: host.id, property: 'power_state' })
})

t.test('clean_reboot evacuates the live VMs, reboots, and comes back enabled', async (t) => {
  const { driver } = await openLab(t)
  const host = named(driver, 'host', 'xcp-ng-03')
  const mail = named(driver, 'VM', 'mail-01')
  const pinned = await failure(act(driver, host, 'clean_reboot'))
  t.same(pinned.data, { actual: 'Running', expected: 'Halted', object: mail.id, property: 'power_state' }, 'a VM on local storage cannot leave')
  t.equal(current(driver, host.id), host, 'refused before anything changed')

  await act(driver, mail, 'clean_shutdown')
  const guests = ['monitoring', 'ci-runner-01'].map((name) => named(driver, 'VM', name))
  const seen: string[] = []
  const ctx = checkingContext(driver, seen)
  await act(driver, host, 'clean_reboot', {}, ctx)
  t.same(seen, [], 'consistent at every step')
  t.ok(progressComplete(ctx.reported), `progress ${ctx.reported.join(' ')}`)
  const after = hostOf(driver, host.id)
  t.same([after.power_state, after.enabled], ['Running', true])
  t.ok((after.startTime ?? 0) > (field<number>(host, 'startTime') ?? 0), 'a new boot time')
  t.same(after.residentVms, [after.controlDomain], 'only its control domain is left')
  for (const vm of guests) {
    const moved = current(driver, vm.id)
    t.not(moved['$container'], host.id, `${String(vm['name_label'])} moved away`)
    t.equal(moved['power_state'], vm['power_state'], 'in the same power state')
  }
})

t.test('clean_shutdown leaves the host down with its control domain; start brings it back', async (t) => {
  const { driver } = await openLab(t)
  const host = named(driver, 'host', 'xcp-ng-02')
  await act(driver, named(driver, 'VM', 'db-02'), 'clean_shutdown')
  await act(driver, host, 'clean_shutdown')
  const down = hostOf(driver, host.id)
  t.same([down.power_state, down.enabled, down.memory.usage], ['Halted', false, 0])
  t.equal(current(driver, down.controlDomain ?? '')['power_state'], 'Halted')
  const desktop = named(driver, 'VM', 'win11-desktop')
  t.equal(current(driver, desktop.id)['$container'], host.id, 'a suspended VM stays with its host')
  const sandbox = named(driver, 'VM', 'dev-sandbox')
  const error = await failure(act(driver, sandbox, 'start'))
  t.same(error.data, { actual: 'Halted', expected: 'Running', object: host.id, property: 'power_state' }, 'a VM on its local SR cannot start')
  await act(driver, desktop, 'resume')
  t.not(current(driver, desktop.id)['$container'], host.id, 'resumed on another host')
  t.same(problems(driver), [])
  for (const action of ['disable', 'clean_reboot']) {
    t.same((await failure(act(driver, host, action))).data, { actual: 'Halted', expected: 'Running', object: host.id, property: 'power_state' })
  }

  const ctx = context()
  await act(driver, host, 'start', {}, ctx)
  t.ok(progressComplete(ctx.reported))
  const up = hostOf(driver, host.id)
  t.same([up.power_state, up.enabled], ['Running', true])
  t.equal(current(driver, up.controlDomain ?? '')['power_state'], 'Running')
  await act(driver, sandbox, 'start')
  t.same(problems(driver), [])
})

t.test('an evacuation without room is refused before anything changes', async (t) => {
  const { driver, changes } = await openLab(t, { spec: TWO_POOLS })
  const a1 = named(driver, 'host', 'a1')
  const small = named(driver, 'VM', 'small')
  const error = await failure(act(driver, a1, 'clean_shutdown'))
  t.same(error.data, { actual: 'Running', expected: 'Halted', object: small.id, property: 'power_state' })
  t.same(changes, [])
})

t.test('VMs leave in batches; an evacuation aborted half-way puts the host back in service', async (t) => {
  const { driver } = await openLab(t, { spec: crowdedHost(12) })
  const host = named(driver, 'host', 'c1')
  const ctx = context()
  // VMs that left the host, step by step (a progress report ends each step)
  const moved: number[] = []
  let leaving = 0
  driver.subscribe((change) => {
    if (change.object.type === 'VM' && change.previous?.['$container'] === host.id) leaving++
  })
  const aborting = {
    ...ctx,
    progress: (percent: number) => {
      ctx.progress(percent)
      moved.push(leaving)
      leaving = 0
      if (moved.some((count) => count > 0)) ctx.controller.abort()
    },
  }
  t.equal((await failure(act(driver, host, 'clean_reboot', {}, aborting))).code, 'ABORTED')
  t.same(moved, [0, 10], 'disabled, then ten VMs moved in one step')
  t.equal(field<string[]>(current(driver, host.id), 'residentVms').length, 1 + 2, 'two are left, with the control domain')
  t.same([hostOf(driver, host.id).power_state, hostOf(driver, host.id).enabled], ['Running', true], 'enabled again')
  t.same(problems(driver), [])
})

t.test('emergency_shutdown powers off every VM, then the hosts, the master last', async (t) => {
  const { driver, changes } = await openLab(t)
  const pool = [...driver.objectsOfType('pool')][0]
  if (pool === undefined) throw new Error('demo pool')
  const seen: string[] = []
  const ctx = checkingContext(driver, seen)
  await act(driver, pool, 'emergency_shutdown', {}, ctx)
  t.same(seen, [])
  t.ok(progressComplete(ctx.reported))
  t.same([...new Set([...driver.objectsOfType('VM')].map((vm) => vm['power_state']))], ['Halted'])
  t.same([...new Set([...driver.objectsOfType('host')].map((host) => host['power_state']))], ['Halted'])
  const halted = changes.filter((change) => change.object.type === 'host' && change.object['power_state'] === 'Halted')
  t.equal(halted.at(-1)?.object.id, pool['master'], 'the master goes last')
  t.same(problems(driver), [])
})

t.test('rolling_reboot reboots each host in turn, master first; VMs on local storage are restarted', async (t) => {
  const { driver, changes } = await openLab(t)
  const pool = [...driver.objectsOfType('pool')][0]
  if (pool === undefined) throw new Error('demo pool')
  const live = [...driver.objectsOfType('VM')].filter((vm) => vm['power_state'] === 'Running' || vm['power_state'] === 'Paused')
  t.ok(live.length > 0, 'some VMs are live')
  const pinned = ['db-01', 'mail-01'].map((name) => named(driver, 'VM', name))
  const seen: string[] = []
  const ctx = checkingContext(driver, seen)
  await act(driver, pool, 'rolling_reboot', {}, ctx)
  t.same(seen, [])
  t.ok(progressComplete(ctx.reported), `progress ${ctx.reported.join(' ')}`)
  const boots = changes
    .filter((change) => change.object.type === 'host' && change.previous?.['power_state'] === 'Halted')
    .map((change) => change.object.id)
  t.equal(boots.length, 3, 'every host rebooted once')
  t.equal(boots[0], pool['master'], 'the master first')
  for (const vm of live) t.equal(current(driver, vm.id)['power_state'], vm['power_state'], `${String(vm['name_label'])} is as it was`)
  for (const vm of pinned) {
    const after = current(driver, vm.id)
    t.equal(after['$container'], vm['$container'], `${String(vm['name_label'])} back on its host`)
    t.ok(field<number>(after, 'startTime') > field<number>(vm, 'startTime'), `${String(vm['name_label'])} was restarted`)
  }
  t.same(problems(driver), [])
})

t.test('rolling_reboot is refused before anything changes when a host cannot be evacuated', async (t) => {
  const { driver, changes } = await openLab(t, { spec: TWO_POOLS })
  const alpha = named(driver, 'pool', 'Alpha')
  const error = await failure(act(driver, alpha, 'rolling_reboot'))
  t.same(error.data, { actual: 'Running', expected: 'Halted', object: named(driver, 'VM', 'small').id, property: 'power_state' })
  t.same(changes, [])
})
