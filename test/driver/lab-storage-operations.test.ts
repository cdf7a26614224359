import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import type { SrRecord, VdiRecord, VmRecord } from '../../src/model/records.js'
import { context, openLab, USER } from '../helpers/lab.js'
import { act, current, failure, field, named, problems, progressComplete } from './fixtures/lab.js'
import { TWO_POOLS } from './fixtures/specs.js'

const GiB = 2 ** 30
const vmOf = (record: XoRecord): VmRecord => record as VmRecord
const srOf = (record: XoRecord): SrRecord => record as SrRecord
const disksOf = (lookup: (id: string) => XoRecord, vm: VmRecord): VdiRecord[] =>
  vm.$VBDs.map((id) => lookup(id)).flatMap((vbd) => (vbd['is_cd_drive'] === true ? [] : [lookup(String(vbd['VDI'])) as VdiRecord]))

t.test('create_vm from a template: its disk on the default SR, created by the caller', async (t) => {
  const { driver } = await openLab(t)
  const pool = [...driver.objectsOfType('pool')][0]
  if (pool === undefined) throw new Error('demo pool')
  const template = named(driver, 'VM-template', 'Debian Bookworm 12')
  const ctx = context(USER)
  const created = await act(driver, pool, 'create_vm', { name_label: 'fresh', template: template.id }, ctx)
  t.equal(created?.type, 'VM')
  t.ok(progressComplete(ctx.reported))
  const vm = vmOf(current(driver, created?.id ?? ''))
  t.same([vm.name_label, vm.power_state, vm.$container, vm.creation?.user, vm.creation?.creator, vm.creation?.template], [
    'fresh',
    'Halted',
    pool.id,
    USER,
    USER,
    template.id,
  ])
  t.same([vm.CPUs.number, vm.memory.size], [1, 2 * GiB], "the template's CPUs and memory")
  const disks = disksOf((id) => current(driver, id), vm)
  t.same(
    disks.map((disk) => [disk.size, disk.$SR]),
    [[10 * GiB, pool['default_SR']]],
  )
  t.same(vm.VIFs, [])
  t.same(problems(driver), [])
})

t.test('create_vm with disks, VIFs and boot', async (t) => {
  const { driver } = await openLab(t)
  const pool = [...driver.objectsOfType('pool')][0]
  if (pool === undefined) throw new Error('demo pool')
  const template = named(driver, 'VM-template', 'Rocky Linux 9')
  const local = named(driver, 'SR', 'Local storage (xcp-ng-01)')
  const network = named(driver, 'network', 'VM network')
  const created = await act(driver, pool, 'create_vm', {
    name_label: 'app-01',
    name_description: 'an app',
    template: template.id,
    cpus: 4,
    memory: 8 * GiB,
    auto_poweron: true,
    boot: true,
    vdis: [
      { name_label: 'system', size: 20 * GiB, sr: local.id },
      { name_label: 'data', size: 100 * GiB },
    ],
    vifs: [{ network: network.id, mac: '02:AB:CD:EF:01:02' }, { network: network.id }],
  })
  const vm = vmOf(current(driver, created?.id ?? ''))
  t.same([vm.power_state, vm.$container], ['Running', named(driver, 'host', 'xcp-ng-01').id], 'started where its local disk is')
  t.same([vm.CPUs, vm.memory.size, vm.auto_poweron, vm.other['auto_poweron']], [{ max: 4, number: 4 }, 8 * GiB, true, 'true'])
  t.same(
    disksOf((id) => current(driver, id), vm).map((disk) => [disk.name_label, disk.size, disk.$SR]),
    [
      ['system', 20 * GiB, local.id],
      ['data', 100 * GiB, named(driver, 'SR', 'NFS shared storage').id],
    ],
  )
  t.equal(current(driver, vm.VIFs[0] ?? '')['MAC'], '02:ab:cd:ef:01:02')
  t.equal(Object.keys(vm.addresses).length, 2, 'an address per VIF')
  t.same(problems(driver), [])
})

t.test('create_vm refuses what cannot be, and creates nothing then', async (t) => {
  const { driver, changes } = await openLab(t, { spec: TWO_POOLS })
  const [alpha, beta] = [...driver.objectsOfType('pool')]
  if (alpha === undefined || beta === undefined) throw new Error('two pools')
  const template = [...driver.objectsOfType('VM-template')].find((record) => record['$pool'] === alpha.id)
  if (template === undefined) throw new Error('alpha template')
  const base = { name_label: 'nope', template: template.id }
  const disk = (sr: string, size = GiB): Record<string, unknown> => ({ ...base, vdis: [{ name_label: 'd', size, sr }] })
  const cases: Array<[string, XoRecord, Record<string, unknown>, string, unknown]> = [
    ['an unknown SR', alpha, disk('missing-sr'), 'NO_SUCH_OBJECT', { id: 'missing-sr', type: 'SR' }],
    ['an unknown network', alpha, { ...base, vifs: [{ network: 'missing-net' }] }, 'NO_SUCH_OBJECT', { id: 'missing-net', type: 'network' }],
    ['an ISO SR', alpha, disk(named(driver, 'SR', 'alpha-iso').id), 'INVALID_PARAMETERS', { errors: [{ path: 'body.vdis.0.sr' }] }],
    ['an SR of another pool', alpha, disk(named(driver, 'SR', 'beta-nfs').id), 'INVALID_PARAMETERS', { errors: [{ path: 'body.vdis.0.sr' }] }],
    ['a disk larger than the free space', alpha, disk(named(driver, 'SR', 'alpha-lvm').id, 200 * GiB), 'INVALID_PARAMETERS', { errors: [{ path: 'body.vdis.0.size' }] }],
    ['a template of another pool', beta, base, 'INVALID_PARAMETERS', { errors: [{ path: 'body.template' }] }],
    ['a network of another pool', alpha, { ...base, vifs: [{ network: named(driver, 'network', 'beta-lan').id }] }, 'INVALID_PARAMETERS', { errors: [{ path: 'body.vifs.0.network' }] }],
    ['a malformed body', alpha, { ...base, cpus: 'two' }, 'INVALID_PARAMETERS', { errors: [{ path: 'body.cpus' }] }],
    ['boot without memory to start', alpha, { ...base, memory: 15 * GiB, boot: true }, 'INCORRECT_STATE', { property: 'free memory' }],
  ]
  for (const [what, pool, params, code, data] of cases) {
    const error = await failure(act(driver, pool, 'create_vm', params))
    t.equal(error.code, code, what)
    t.match(error.data, data, what)
  }
  t.same(changes, [], 'nothing was created')
})

t.test('SR scan and reclaim_space find the figures right; reclaiming an ISO library is refused', async (t) => {
  const { driver, changes } = await openLab(t)
  const nfs = named(driver, 'SR', 'NFS shared storage')
  for (const action of ['scan', 'reclaim_space']) {
    const ctx = context()
    await act(driver, nfs, action, {}, ctx)
    t.ok(progressComplete(ctx.reported), action)
  }
  t.same(changes, [], 'nothing to correct')
  const iso = named(driver, 'SR', 'ISO library')
  await act(driver, iso, 'scan')
  t.same((await failure(act(driver, iso, 'reclaim_space'))).data, { actual: 'iso', expected: 'user', object: iso.id, property: 'content_type' })
})

t.test('VDI migrate: a new id on the new SR, drives and snapshots follow, SR figures move', async (t) => {
  const { driver } = await openLab(t)
  const web = named(driver, 'VM', 'web-02')
  const [disk] = disksOf((id) => current(driver, id), vmOf(web))
  if (disk === undefined) throw new Error('web-02 disk')
  t.ok(disk.snapshots.length > 0, 'the disk has snapshots to follow it')
  const nfs = srOf(named(driver, 'SR', 'NFS shared storage'))
  const local = srOf(named(driver, 'SR', 'Local storage (xcp-ng-02)'))
  const ctx = context()
  const created = await act(driver, current(driver, disk.id), 'migrate', { srId: local.id }, ctx)
  t.ok(progressComplete(ctx.reported))
  t.equal(created?.type, 'VDI')
  t.not(created?.id, disk.id)
  t.equal(driver.getObject(disk.id), undefined, 'the old disk is gone')
  const moved = current(driver, created?.id ?? '') as VdiRecord
  t.same([moved.size, moved.usage, moved.$SR, moved.snapshots], [disk.size, disk.usage, local.id, disk.snapshots])
  t.same(disksOf((id) => current(driver, id), vmOf(current(driver, web.id))).map((vdi) => vdi.id), [moved.id])
  for (const id of disk.snapshots) t.equal(current(driver, id)['$snapshot_of'], moved.id)
  t.equal(srOf(current(driver, nfs.id)).usage, nfs.usage - disk.size)
  t.equal(srOf(current(driver, local.id)).usage, local.usage + disk.size)
  t.same(problems(driver), [])
})

t.test('VDI migrate checks the destination and who uses the disk', async (t) => {
  const { driver } = await openLab(t)
  const diskOf = (name: string): XoRecord => {
    const [disk] = disksOf((id) => current(driver, id), vmOf(named(driver, 'VM', name)))
    if (disk === undefined) throw new Error(`${name} disk`)
    return current(driver, disk.id)
  }
  const [nfs, iso, local2, lvm3] = ['NFS shared storage', 'ISO library', 'Local storage (xcp-ng-02)', 'Local storage (xcp-ng-03)'].map((name) =>
    named(driver, 'SR', name),
  )
  if (nfs === undefined || iso === undefined || local2 === undefined || lvm3 === undefined) throw new Error('demo SRs')
  const refusals: Array<[string, string, RegExp]> = [
    ['web-01', nfs.id, /already on/],
    ['web-01', iso.id, /ISO/],
    ['web-01', local2.id, /could not reach/],
  ]
  for (const [vm, sr, message] of refusals) {
    const error = await failure(act(driver, diskOf(vm), 'migrate', { srId: sr }))
    t.match(error.data, { errors: [{ path: 'body.srId', message }] }, `${vm} → ${String(current(driver, sr)['name_label'])}`)
  }
  const staging = named(driver, 'VM', 'staging-app')
  const disk = diskOf('staging-app')
  const created = await act(driver, disk, 'migrate', { srId: lvm3.id })
  t.equal(current(driver, created?.id ?? '')['usage'], disk['size'], 'a thick SR allocates the whole disk')
  t.equal(current(driver, staging.id)['$container'], lvm3['$container'], 'the halted VM now lives with its local disk')
  t.same(problems(driver), [])
})
