import t from 'tap'
import { context, openLab } from '../helpers/lab.js'
import { act, allRecords, checkingContext, current, named, problems, progressComplete } from './fixtures/lab.js'

t.test('smart_reboot and emergency_shutdown keep the lab consistent at every step', async (t) => {
  const { driver } = await openLab(t)
  const host = named(driver, 'host', 'xcp-ng-03')
  for (const action of ['smart_reboot', 'emergency_shutdown']) {
    const seen: string[] = []
    const ctx = checkingContext(driver, seen)
    await act(driver, current(driver, host.id), action, {}, ctx)
    t.same(seen, [], `${action}: consistent at every step`)
    t.ok(progressComplete(ctx.reported), `${action}: progress ${ctx.reported.join(' ')}`)
  }
  t.equal(current(driver, host.id)['power_state'], 'Halted')
})

t.test('forget leaves no link to the host or what went with it', async (t) => {
  const { driver } = await openLab(t)
  const host = named(driver, 'host', 'xcp-ng-03')
  await act(driver, host, 'emergency_shutdown')
  const held = allRecords(driver).filter((record) => record['$container'] === host.id && record.type === 'VM')
  for (const vm of held) await driver.destroy(current(driver, vm.id), context())
  const local = allRecords(driver).find((record) => record.type === 'SR' && record['$container'] === host.id)
  for (const vdi of (local?.['VDIs'] as string[] | undefined) ?? []) await driver.destroy(current(driver, vdi), context())
  const seen: string[] = []
  await act(driver, current(driver, host.id), 'forget', {}, checkingContext(driver, seen))
  t.same(seen, [], 'consistent at every step')
  t.same(problems(driver), [])
  t.notOk(allRecords(driver).some((record) => record.id === host.id))
})
