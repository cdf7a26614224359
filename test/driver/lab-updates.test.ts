import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import type { HostRecord, VmRecord } from '../../src/model/records.js'
import { context, openLab } from '../helpers/lab.js'
import { act, current, failure, field, named, problems } from './fixtures/lab.js'
import { TWO_POOLS } from './fixtures/specs.js'

const GiB = 2 ** 30
const vmOf = (record: XoRecord): VmRecord => record as VmRecord

t.test('PATCH a VM: every field, in one change, durable', async (t) => {
  const first = await openLab(t, { keep: true })
  const { driver, changes } = first
  const erp = named(driver, 'VM', 'legacy-erp')
  await driver.update(erp, {
    nameLabel: 'erp',
    nameDescription: 'the old one',
    cpus: 2,
    memory: 8 * GiB,
    autoPoweron: true,
    highAvailability: 'best-effort',
    startDelay: 30,
    notes: 'do not start',
    tags: ['legacy', 'legacy', 'archive'],
  })
  t.equal(changes.length, 1, 'one change event')
  const vm = vmOf(current(driver, erp.id))
  t.same(
    [vm.name_label, vm.name_description, vm.CPUs, vm.memory.size, vm.memory.dynamic, vm.auto_poweron, vm.other['auto_poweron']],
    ['erp', 'the old one', { max: 2, number: 2 }, 8 * GiB, [8 * GiB, 8 * GiB], true, 'true'],
  )
  t.same([vm.high_availability, vm.startDelay, vm.notes, vm.tags], ['best-effort', 30, 'do not start', ['legacy', 'archive']])
  await driver.update(current(driver, erp.id), { notes: '', autoPoweron: false })
  t.same([vmOf(current(driver, erp.id)).notes, vmOf(current(driver, erp.id)).other['auto_poweron']], [undefined, undefined])
  t.same(problems(driver), [])
  const after = current(driver, erp.id)
  await driver.close()
  first.db.close()
  const second = await openLab(t, { dataDir: first.dataDir })
  t.same(second.driver.getObject(erp.id), after, 'durable')
})

t.test('PATCH a running VM: hot changes within its limits and its host', async (t) => {
  const { driver } = await openLab(t)
  const db = named(driver, 'VM', 'db-01')
  const host = named(driver, 'host', 'xcp-ng-01')
  const usage = (): number => (current(driver, host.id) as HostRecord).memory.usage
  const before = usage()
  await driver.update(db, { cpus: 4, memory: 24 * GiB })
  t.same([vmOf(current(driver, db.id)).CPUs, vmOf(current(driver, db.id)).memory.size], [{ max: 8, number: 4 }, 24 * GiB])
  t.equal(usage(), before - 8 * GiB, 'the host got the memory back')
  const tooMany = await failure(driver.update(current(driver, db.id), { cpus: 9 }))
  t.match(tooMany.data, { errors: [{ path: 'body.cpus', message: /at most 8/ }] })
  const tooBig = await failure(driver.update(current(driver, db.id), { memory: 64 * GiB }))
  t.match(tooBig.data, { errors: [{ path: 'body.memory', message: /static maximum/ }] })
  const desktop = named(driver, 'VM', 'win11-desktop')
  const suspended = await failure(driver.update(desktop, { memory: 4 * GiB }))
  t.same(suspended.data, { actual: 'Suspended', expected: ['Halted', 'Running', 'Paused'], object: desktop.id, property: 'power_state' })
  t.same(problems(driver), [])
})

t.test('PATCH is all or nothing', async (t) => {
  const { driver, changes } = await openLab(t)
  const web = named(driver, 'VM', 'web-01')
  const error = await failure(driver.update(web, { nameLabel: 'renamed', cpus: 99, color: 'blue' }))
  t.equal(error.code, 'INVALID_PARAMETERS')
  t.match(error.data, { errors: [{ path: 'body.cpus' }, { path: 'body.color', message: /not a field/ }] })
  t.equal(current(driver, web.id), web)
  t.same(changes, [])
})

t.test('PATCH disks, VIFs and named objects', async (t) => {
  const { driver } = await openLab(t)
  const web = vmOf(named(driver, 'VM', 'web-01'))
  const disk = current(driver, String(current(driver, web.$VBDs[0] ?? '')['VDI']))
  const shrink = await failure(driver.update(disk, { size: GiB }))
  t.match(shrink.data, { errors: [{ path: 'body.size', message: /only grow/ }] })
  const sr = named(driver, 'SR', 'NFS shared storage')
  await driver.update(disk, { size: 30 * GiB, name_label: 'web-01 root' })
  t.same([current(driver, disk.id)['size'], current(driver, disk.id)['name_label']], [30 * GiB, 'web-01 root'])
  t.equal(current(driver, sr.id)['usage'], field<number>(sr, 'usage') + 10 * GiB)

  const vif = current(driver, web.VIFs[0] ?? '')
  await driver.update(vif, { lockingMode: 'locked', allowedIpv4Addresses: ['10.0.1.100'], rateLimit: 1000, txChecksumming: false })
  t.match(current(driver, vif.id), { lockingMode: 'locked', allowedIpv4Addresses: ['10.0.1.100'], rateLimit: 1000, txChecksumming: false })
  await driver.update(current(driver, vif.id), { rateLimit: null })
  t.equal(current(driver, vif.id)['rateLimit'], undefined)

  for (const [type, name] of [
    ['network', 'VM network'],
    ['SR', 'NFS shared storage'],
    ['host', 'xcp-ng-01'],
    ['pool', 'Demo pool'],
  ] as const) {
    const record = named(driver, type, name)
    await driver.update(record, { name_label: `${name} (renamed)`, name_description: 'changed' })
    t.match(current(driver, record.id), { name_label: `${name} (renamed)`, name_description: 'changed' })
  }
  t.same(problems(driver), [])
})

t.test('DELETE a running VM: halted first, then gone with its disks, snapshots and messages', async (t) => {
  const { driver, changes } = await openLab(t)
  const web = vmOf(named(driver, 'VM', 'web-02'))
  const types = ['VM', 'VM-snapshot', 'VDI', 'VDI-snapshot', 'VBD', 'VIF', 'message']
  const counts = (): number[] => types.map((type) => driver.countOfType(type))
  const before = counts()
  await driver.destroy(web, context())
  t.equal(driver.getObject(web.id), undefined)
  // the VM, its snapshot, its disk and the disk's snapshot, two drives and two VIFs (its own and its snapshot's)
  t.same(
    counts().map((count, i) => (before[i] ?? 0) - count),
    [1, 1, 1, 1, 2, 2, 0],
  )
  t.ok(
    changes.some((change) => change.object.id === web.id && change.kind === 'update' && change.object['power_state'] === 'Halted'),
    'the hard shutdown showed first',
  )
  t.same(problems(driver), [])

  const sandbox = vmOf(named(driver, 'VM', 'dev-sandbox'))
  const iso = named(driver, 'VDI', 'ubuntu-24.04.1-live-server-amd64.iso')
  await driver.destroy(sandbox, context())
  t.ok(driver.getObject(iso.id) !== undefined, 'an ISO in the CD drive stays')
  const staging = named(driver, 'VM', 'staging-app')
  const shutdown = [...driver.objectsOfType('message')].find((message) => message['name'] === 'VM_SHUTDOWN')
  if (shutdown === undefined) throw new Error('demo message')
  t.equal(shutdown['$object'], staging['uuid'])
  await driver.destroy(staging, context())
  t.equal(driver.getObject(shutdown.id), undefined, 'messages about it go with it')
  t.same(problems(driver), [])
})

t.test('DELETE snapshots and disks', async (t) => {
  const { driver } = await openLab(t)
  const db = vmOf(named(driver, 'VM', 'db-01'))
  const snapshot = named(driver, 'VM-snapshot', 'db-01 pre-migration')
  await driver.destroy(snapshot, context())
  t.equal(vmOf(current(driver, db.id)).parent, undefined, 'the VM no longer derives from it')
  t.same(vmOf(current(driver, db.id)).snapshots, [])
  t.same(problems(driver), [])

  const [rootVbd] = db.$VBDs
  const root = current(driver, String(current(driver, rootVbd ?? '')['VDI']))
  const attached = await failure(driver.destroy(root, context()))
  t.same(attached.data, { actual: true, expected: false, object: rootVbd, property: 'attached' })

  const erp = vmOf(named(driver, 'VM', 'legacy-erp'))
  const disks = erp.$VBDs.map((id) => current(driver, id)).filter((vbd) => vbd['is_cd_drive'] === false)
  await driver.destroy(current(driver, String(disks[1]?.['VDI'])), context())
  t.equal(vmOf(current(driver, erp.id)).$VBDs.length, erp.$VBDs.length - 1, 'its drive went with it')
  const isoVbd = vmOf(current(driver, erp.id)).$VBDs.map((id) => current(driver, id)).find((vbd) => vbd['is_cd_drive'] === true)
  await driver.destroy(current(driver, String(isoVbd?.['VDI'])), context())
  t.equal(current(driver, isoVbd?.id ?? '')['VDI'], undefined, 'a CD drive is emptied, not removed')

  const web02 = named(driver, 'VM', 'web-02')
  const vdiSnapshot = current(driver, String(current(driver, vmOf(named(driver, 'VM-snapshot', 'web-02 before nginx upgrade')).$VBDs[0] ?? '')['VDI']))
  await driver.destroy(vdiSnapshot, context())
  t.same(vmOf(named(driver, 'VM-snapshot', 'web-02 before nginx upgrade')).$VBDs, [])
  t.ok(driver.getObject(web02.id))
  t.same(problems(driver), [])
})

t.test('DELETE a network: not while used', async (t) => {
  const { driver } = await openLab(t, { spec: TWO_POOLS })
  const lan = named(driver, 'network', 'alpha-lan')
  const management = await failure(driver.destroy(lan, context()))
  t.match(management.data, { actual: true, expected: false, property: 'management' })
  const spare = named(driver, 'network', 'alpha-spare')
  const user = named(driver, 'VM', 'spare-user')
  await act(driver, user, 'start')
  const used = await failure(driver.destroy(spare, context()))
  t.same(used.data, { actual: true, expected: false, object: vmOf(current(driver, user.id)).VIFs[0], property: 'attached' })
  await act(driver, current(driver, user.id), 'hard_shutdown')
  await driver.destroy(spare, context())
  t.equal(driver.getObject(spare.id), undefined)
  t.same(vmOf(current(driver, user.id)).VIFs, [], 'the VIFs of halted VMs go with it')
  t.equal(driver.countOfType('PIF'), 3, 'so do its PIFs')
  t.same(problems(driver), [])
})

t.test('tags: PUT and DELETE one tag, idempotent, on every taggable type', async (t) => {
  const { driver, changes } = await openLab(t)
  const records = ['VM', 'VM-snapshot', 'VM-template', 'VM-controller', 'host', 'pool', 'SR', 'VDI', 'VDI-snapshot', 'network'].map(
    (type) => [...driver.objectsOfType(type)][0] as XoRecord,
  )
  for (const record of records) {
    await driver.setTag(record, 'a tag/with slash', true)
    const count = changes.length
    await driver.setTag(current(driver, record.id), 'a tag/with slash', true)
    t.equal(changes.length, count, `${record.type}: adding twice changes nothing`)
    t.ok(field<string[]>(current(driver, record.id), 'tags').includes('a tag/with slash'))
    await driver.setTag(current(driver, record.id), 'a tag/with slash', false)
    await driver.setTag(current(driver, record.id), 'a tag/with slash', false)
    t.same(current(driver, record.id)['tags'], record['tags'], `${record.type}: back as it was`)
  }
  t.same(problems(driver), [])
})
