import t from 'tap'
import type { ObjectChange, XoRecord } from '../../src/driver/types.js'
import { INSTALLATION_MARK } from '../../src/installation.js'
import type { VdiSnapshotRecord, VmRecord, VmSnapshotRecord } from '../../src/model/records.js'
import { context, NOW, openLab, USER } from '../helpers/lab.js'
import { act, current, failure, field, named, problems, progressComplete } from './fixtures/lab.js'
import { TWO_POOLS } from './fixtures/specs.js'

const GiB = 2 ** 30
const vmOf = (record: XoRecord): VmRecord => record as VmRecord
/** What a batch of changes did, as sorted `kind type` lines: equal for two operations of the same cost. */
const shape = (changes: readonly ObjectChange[]): string[] => changes.map((change) => `${change.kind} ${change.object.type}`).sort()

t.test('a snapshot copies settings and links disks and VIFs, in every power state', async (t) => {
  const { driver } = await openLab(t)
  for (const name of ['web-01', 'ci-runner-01', 'win11-desktop', 'legacy-erp']) {
    const vm = named(driver, 'VM', name)
    const ctx = context()
    const created = await act(driver, vm, 'snapshot', {}, ctx)
    t.ok(progressComplete(ctx.reported), `${name}: progress`)
    const snapshot = current(driver, created?.id ?? '') as VmSnapshotRecord
    t.same([created?.type, snapshot.type, snapshot.name_label, snapshot.power_state], ['VM-snapshot', 'VM-snapshot', name, 'Halted'])
    const after = vmOf(current(driver, vm.id))
    t.equal(after.parent, snapshot.id, 'the VM derives from its newest snapshot')
    t.equal(snapshot.parent, vmOf(vm).parent, 'which derives from the previous one')
    t.equal(after.power_state, vm['power_state'], 'the VM itself is untouched')
    t.ok(Number.isInteger(snapshot.snapshot_time) && snapshot.snapshot_time - NOW / 1000 > 0 && snapshot.snapshot_time - NOW / 1000 < 600, 'the lab clock, in seconds')
    t.same(snapshot.addresses, {})
    t.equal(snapshot.VIFs.length, vmOf(vm).VIFs.length)
    const disks = snapshot.$VBDs.map((id) => current(driver, String(current(driver, id)['VDI'])) as VdiSnapshotRecord)
    t.ok(disks.length > 0 && disks.every((disk) => disk.type === 'VDI-snapshot' && disk.snapshot_time === snapshot.snapshot_time))
  }
  const labelled = await act(driver, named(driver, 'VM', 'web-01'), 'snapshot', { name_label: 'before upgrade' })
  t.equal(current(driver, labelled?.id ?? '')['name_label'], 'before upgrade')
  t.same(problems(driver), [])
})

t.test('snapshot and clone cost the same for a 10 GiB and a 2 TiB disk', async (t) => {
  const { driver, changes } = await openLab(t, { spec: TWO_POOLS })
  const nfs = named(driver, 'SR', 'alpha-nfs')
  const cost = async (name: string, action: string): Promise<{ reported: number[]; changes: string[]; physical: number }> => {
    const vm = named(driver, 'VM', name)
    const before = changes.length
    const physical = field<number>(current(driver, nfs.id), 'physical_usage')
    const ctx = context()
    await act(driver, vm, action, {}, ctx)
    return {
      reported: ctx.reported,
      changes: shape(changes.slice(before)),
      physical: field<number>(current(driver, nfs.id), 'physical_usage') - physical,
    }
  }
  const diskSize = (name: string): number =>
    field<number>(current(driver, String(current(driver, vmOf(named(driver, 'VM', name)).$VBDs[0] ?? '')['VDI'])), 'size')
  t.same([diskSize('small'), diskSize('big')], [10 * GiB, 2048 * GiB])

  const [small, big] = [await cost('small', 'snapshot'), await cost('big', 'snapshot')]
  t.same(big, small, 'snapshot: same steps, same records, no disk data copied')
  t.equal(small.physical, 0)
  for (const name of ['small', 'big']) await act(driver, named(driver, 'VM', name), 'hard_shutdown')
  const [smallClone, bigClone] = [await cost('small', 'clone'), await cost('big', 'clone')]
  t.same(bigClone, smallClone, 'clone: same steps, same records, no disk data copied')
  t.equal(smallClone.physical, 0)
  t.same(problems(driver), [])
})

t.test('a clone is a new halted VM of the calling user, with its own disks and MACs', async (t) => {
  const { driver } = await openLab(t)
  const erp = named(driver, 'VM', 'legacy-erp')
  const created = await act(driver, erp, 'clone', { name_label: 'erp-copy' }, context(USER))
  const clone = vmOf(current(driver, created?.id ?? ''))
  t.same([clone.name_label, clone.power_state, clone.creation?.user, clone.creation?.creator], ['erp-copy', 'Halted', USER, USER])
  t.equal(clone.creation?.template, vmOf(erp).creation?.template)
  t.same(clone.snapshots, [])
  t.equal(clone.parent, undefined)
  const disksOf = (vm: VmRecord): string[] => vm.$VBDs.map((id) => String(current(driver, id)['VDI'] ?? ''))
  const macs = (vm: VmRecord): string[] => vm.VIFs.map((id) => String(current(driver, id)['MAC']))
  t.equal(disksOf(clone).length, disksOf(vmOf(erp)).length, 'every drive, the CD drive included')
  t.same(
    disksOf(clone).filter((id) => disksOf(vmOf(erp)).includes(id)),
    disksOf(vmOf(erp)).filter((id) => current(driver, id)['$SR'] === named(driver, 'SR', 'ISO library').id),
    'only the ISO in the CD drive is shared',
  )
  t.notSame(macs(clone), macs(vmOf(erp)))
  await act(driver, current(driver, clone.id), 'start')
  t.same(problems(driver), [])
})

t.test('snapshots and clones on a thick SR reserve the full size, and fail with 409 without room', async (t) => {
  const { driver } = await openLab(t)
  const mail = named(driver, 'VM', 'mail-01')
  const lvm = named(driver, 'SR', 'Local storage (xcp-ng-03)')
  await act(driver, mail, 'clean_shutdown')
  const free = (): number => field<number>(current(driver, lvm.id), 'size') - field<number>(current(driver, lvm.id), 'physical_usage')
  const before = free()
  await act(driver, mail, 'clone')
  t.equal(before - free(), 60 * GiB)
  while (free() >= 60 * GiB) await act(driver, mail, 'clone')
  const error = await failure(act(driver, mail, 'snapshot'))
  t.same(error.data, { actual: free(), expected: 60 * GiB, object: lvm.id, property: 'free space' })
  t.same(problems(driver), [])
})

t.test('revert puts back the configuration and disk sizes; a VM snapshotted running runs again', async (t) => {
  const { driver } = await openLab(t)
  const web = named(driver, 'VM', 'web-01')
  const created = await act(driver, web, 'snapshot')
  const snapshotId = created?.id ?? ''
  const diskId = String(current(driver, vmOf(web).$VBDs[0] ?? '')['VDI'])
  await driver.update(current(driver, diskId), { size: 40 * GiB })
  await act(driver, web, 'clean_shutdown')
  await driver.update(current(driver, web.id), { cpus: 6, memory: 12 * GiB, nameLabel: 'web-01 (new)' })
  await act(driver, current(driver, web.id), 'start')

  const ctx = context()
  await act(driver, current(driver, web.id), 'revert_snapshot', { snapshotId }, ctx)
  t.ok(progressComplete(ctx.reported))
  const reverted = vmOf(current(driver, web.id))
  t.same([reverted.power_state, reverted.$container], ['Running', web['$container']], 'running again, on its host')
  t.same([reverted.CPUs, reverted.memory.size, reverted.memory.static], [vmOf(web).CPUs, vmOf(web).memory.size, vmOf(web).memory.static])
  t.equal(reverted.name_label, 'web-01 (new)', 'names and tags are not configuration')
  t.equal(reverted.parent, snapshotId)
  t.equal(current(driver, diskId)['size'], 20 * GiB, 'the disk is back to its size')
  t.same(problems(driver), [])

  const erp = named(driver, 'VM', 'legacy-erp')
  const halted = await act(driver, erp, 'snapshot')
  await act(driver, erp, 'start')
  await act(driver, current(driver, erp.id), 'revert_snapshot', { snapshotId: halted?.id })
  t.equal(current(driver, erp.id)['power_state'], 'Halted', 'a VM snapshotted halted stays halted')
  t.same(problems(driver), [])

  const other = named(driver, 'VM-snapshot', 'db-01 pre-migration')
  const before = current(driver, web.id)
  const error = await failure(act(driver, before, 'revert_snapshot', { snapshotId: other.id }))
  t.match(error.data, { errors: [{ path: 'body.snapshotId' }] })
  t.equal(current(driver, web.id), before, 'checked before the VM is halted: nothing changed')
})

t.test('an aborted snapshot creates nothing', async (t) => {
  const { driver, changes } = await openLab(t)
  const web = named(driver, 'VM', 'web-01')
  const ctx = context()
  const original = ctx.progress
  const aborting = { ...ctx, progress: (percent: number) => (original(percent), ctx.controller.abort()) }
  t.equal((await failure(driver.perform(web, 'snapshot', {}, aborting))).code, 'ABORTED')
  t.equal(ctx.reported.length, 1)
  t.same(changes, [])
  t.equal(driver.countOfType('VM-snapshot'), 2)
})

t.test('issue 26: a snapshot takes the other_config its taker gives, durably, and never its VM installation mark', async (t) => {
  const first = await openLab(t, { keep: true })
  const vm = named(first.driver, 'VM', 'web-01')
  first.driver.applyChanges([{ kind: 'update', object: { ...vm, other: { ...vmOf(vm).other, [INSTALLATION_MARK]: 'of-the-vm', 'xo:backup:job': 'job-0' } } }])
  const plain = await act(first.driver, current(first.driver, vm.id), 'snapshot', { name_label: 'by hand' })
  const marked = await act(first.driver, current(first.driver, vm.id), 'snapshot', { other_config: { [INSTALLATION_MARK]: 'of-the-taker', 'xo:backup:job': 'job-1' } })

  const count = first.driver.countOfType('VM-snapshot')
  const bad = await failure(act(first.driver, current(first.driver, vm.id), 'snapshot', { other_config: { [INSTALLATION_MARK]: 1 } }))
  t.equal(bad.code, 'INVALID_PARAMETERS')
  t.match(bad.data, { errors: [{ path: 'body.other_config' }] })
  t.equal(first.driver.countOfType('VM-snapshot'), count, 'nothing taken')
  await first.driver.close()
  first.db.close()

  const { driver } = await openLab(t, { dataDir: first.dataDir })
  const otherOf = (id: string | undefined): Record<string, string> => field<Record<string, string>>(current(driver, id ?? ''), 'other')
  t.equal(otherOf(plain?.id)[INSTALLATION_MARK], undefined, 'not inherited')
  t.equal(otherOf(plain?.id)['xo:backup:job'], 'job-0', 'the rest of the VM other_config is, as XAPI copies it')
  t.match(otherOf(marked?.id), { [INSTALLATION_MARK]: 'of-the-taker', 'xo:backup:job': 'job-1' })
  t.same(problems(driver), [])
})

t.test('snapshotVdi: one disk snapshotted on its own, outside the REST catalogue', async (t) => {
  const { driver } = await openLab(t)
  const vm = vmOf(named(driver, 'VM', 'web-01'))
  const vdiId = String(current(driver, vm.$VBDs[0] ?? '')['VDI'])
  const ctx = context()
  const created = await driver.snapshotVdi(current(driver, vdiId), ctx)
  t.ok(progressComplete(ctx.reported), 'progress')
  const snapshot = current(driver, created.id)
  const vdi = current(driver, vdiId)
  t.same([created.type, snapshot.type, snapshot['$snapshot_of'], snapshot['$SR'], snapshot['size']], ['VDI-snapshot', 'VDI-snapshot', vdiId, vdi['$SR'], vdi['size']])
  t.ok(field<string[]>(vdi, 'snapshots').includes(snapshot.id), 'the disk lists it')
  t.same(snapshot['$VBDs'], [], 'plugged into nothing')
  t.equal(driver.capabilities.actions['VDI']?.includes('snapshot'), false, 'not declared as a REST action')
  const refused = await failure(driver.snapshotVdi(current(driver, created.id), context()))
  t.equal(refused.code, 'NO_SUCH_OBJECT', 'a snapshot of a snapshot is not served')
  t.same(problems(driver), [])
})
