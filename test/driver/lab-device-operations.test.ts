import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import { context, openLab } from '../helpers/lab.js'
import { act, current, failure, field, named, problems, progressComplete } from './fixtures/lab.js'

const ids = (record: XoRecord, name: string): string[] => field<string[]>(record, name)

t.test('create: a VBD in the first free slot, a VIF with a generated MAC and the next device, an empty VDI; all unplugged', async (t) => {
  const { driver } = await openLab(t)
  const vm = named(driver, 'VM', 'web-01')
  const sr = current(driver, String(current(driver, String(current(driver, ids(vm, '$VBDs')[0] ?? '')['VDI']))['$SR']))
  const ctx = context()
  const vdi = await driver.create('VDI', { srId: sr.id, name_label: 'extra', virtual_size: 2 ** 30 }, ctx)
  t.ok(progressComplete(ctx.reported))
  t.match(current(driver, vdi.id), { type: 'VDI', name_label: 'extra', size: 2 ** 30, $SR: sr.id })
  t.ok(ids(current(driver, sr.id), 'VDIs').includes(vdi.id), 'its SR lists it')

  const slots = ids(vm, '$VBDs').map((id) => String(current(driver, id)['position']))
  const vbd = await driver.create('VBD', { VM: vm.id, VDI: vdi.id }, context())
  const vbdRecord = current(driver, vbd.id)
  t.match(vbdRecord, { type: 'VBD', VM: vm.id, VDI: vdi.id, attached: false, bootable: false, read_only: false, is_cd_drive: false })
  t.notOk(slots.includes(String(vbdRecord['position'])), 'a free slot')
  t.ok(ids(current(driver, vm.id), '$VBDs').includes(vbd.id) && ids(current(driver, vdi.id), '$VBDs').includes(vbd.id), 'linked both ways')
  const cd = await driver.create('VBD', { VM: vm.id, type: 'CD' }, context())
  t.match(current(driver, cd.id), { is_cd_drive: true, read_only: true, attached: false })

  const network = current(driver, String(current(driver, ids(vm, 'VIFs')[0] ?? '')['$network']))
  const devices = ids(vm, 'VIFs').map((id) => String(current(driver, id)['device']))
  const vif = await driver.create('VIF', { vmId: vm.id, networkId: network.id }, context())
  const vifRecord = current(driver, vif.id)
  t.match(vifRecord, { type: 'VIF', $VM: vm.id, $network: network.id, attached: false, MTU: network['MTU'], MAC: /^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/ })
  let next = 0
  while (devices.includes(String(next))) next++
  t.equal(vifRecord['device'], String(next), 'the next free device number')
  t.ok(ids(current(driver, network.id), 'VIFs').includes(vif.id))
  t.same(problems(driver), [])
})

t.test('connect and disconnect on a running VM; destroy of an unplugged device keeps its disk; the rules refuse the rest', async (t) => {
  const { driver, changes } = await openLab(t)
  const running = named(driver, 'VM', 'web-01')
  const halted = named(driver, 'VM', 'staging-app')
  const disk = String(current(driver, ids(running, '$VBDs')[0] ?? '')['VDI'])
  const sr = String(current(driver, disk)['$SR'])
  const vdi = await driver.create('VDI', { srId: sr, name_label: 'x', virtual_size: 2 ** 20 }, context())
  const vbd = await driver.create('VBD', { VM: running.id, VDI: vdi.id }, context())
  await act(driver, current(driver, vbd.id), 'connect')
  t.equal(current(driver, vbd.id)['attached'], true)
  t.match(await failure(act(driver, current(driver, vbd.id), 'connect')), { code: 'INCORRECT_STATE', data: { property: 'attached', actual: true } })
  t.match(await failure(driver.destroy(current(driver, vbd.id), context())), { code: 'INCORRECT_STATE', data: { property: 'attached' } })
  await act(driver, current(driver, vbd.id), 'disconnect')
  await driver.destroy(current(driver, vbd.id), context())
  t.equal(driver.getObject(vbd.id), undefined)
  t.same(ids(current(driver, vdi.id), '$VBDs'), [], 'the disk stays, plugged into nothing')

  const slot = String(current(driver, ids(halted, '$VBDs')[0] ?? '')['position'])
  const haltedVbd = await driver.create('VBD', { VM: halted.id, VDI: vdi.id }, context())
  const before = changes.length
  t.match(await failure(act(driver, current(driver, haltedVbd.id), 'connect')), { code: 'INCORRECT_STATE', data: { property: 'power_state', expected: 'Running', actual: 'Halted' } })
  t.match(await failure(driver.create('VBD', { VM: halted.id, VDI: vdi.id, userdevice: slot }, context())), { code: 'OBJECT_ALREADY_EXISTS', data: { field: 'userdevice', value: slot } })
  t.match(await failure(driver.create('VBD', { VM: halted.id, type: 'CD', mode: 'RW', VDI: vdi.id }, context())), { code: 'INVALID_PARAMETERS' })
  t.match(await failure(driver.create('VIF', { vmId: halted.id, networkId: 'nope' }, context())), { code: 'NO_SUCH_OBJECT' })
  t.match(await failure(driver.create('VIF', { vmId: halted.id, networkId: String(current(driver, ids(halted, 'VIFs')[0] ?? '')['$network']), device: String(current(driver, ids(halted, 'VIFs')[0] ?? '')['device']) }, context())), {
    code: 'OBJECT_ALREADY_EXISTS',
    data: { type: 'VIF', field: 'device' },
  })
  t.equal(changes.length, before, 'the refusals changed nothing')
  t.same(problems(driver), [])
})

t.test('createBlankVm: a halted VM with no devices from XAPI\u2019s fields; changeMedia: a CD drive\u2019s disk in and out', async (t) => {
  const { driver, changes } = await openLab(t)
  const pool = named(driver, 'pool', 'Demo pool')
  const GiB = 2 ** 30
  const fields = {
    name_label: 'blank',
    name_description: 'from fields',
    cpus: { max: 4, atStartup: 2 },
    memory: { staticMin: GiB / 2, staticMax: 2 * GiB, dynamicMin: GiB, dynamicMax: GiB },
    hvm: false,
    PV_args: 'console=hvc0',
    other_config: { k: 'v' },
  }
  const ctx = context()
  const created = await driver.createBlankVm(pool, fields, ctx)
  t.ok(progressComplete(ctx.reported))
  t.match(current(driver, created.id), {
    type: 'VM',
    name_label: 'blank',
    name_description: 'from fields',
    power_state: 'Halted',
    CPUs: { max: 4, number: 2 },
    memory: { static: [GiB / 2, 2 * GiB], dynamic: [GiB, GiB], size: GiB },
    virtualizationMode: 'pv',
    PV_args: 'console=hvc0',
    other: { k: 'v' },
    $VBDs: [],
    VIFs: [],
  })
  t.equal(field<{ template?: string }>(current(driver, created.id), 'creation').template, undefined, 'made from fields, not a template')
  const before = changes.length
  t.match(await failure(driver.createBlankVm(pool, { ...fields, memory: { ...fields.memory, dynamicMax: 4 * GiB } }, context())), { code: 'INVALID_PARAMETERS' })
  t.match(await failure(driver.createBlankVm(pool, { ...fields, cpus: { max: 1, atStartup: 2 } }, context())), { code: 'INVALID_PARAMETERS' })
  t.equal(changes.length, before, 'the refusals changed nothing')

  const vm = named(driver, 'VM', 'web-01')
  const drive = await driver.create('VBD', { VM: vm.id, type: 'CD' }, context())
  const iso = [...driver.objectsOfType('SR')].find((sr) => sr['content_type'] === 'iso' && ids(sr, 'VDIs').length > 0)
  const disk = ids(iso ?? vm, 'VDIs')[0] ?? ''
  await driver.changeMedia(current(driver, drive.id), disk, context())
  t.equal(current(driver, drive.id)['VDI'], disk)
  t.ok(ids(current(driver, disk), '$VBDs').includes(drive.id))
  t.match(await failure(driver.changeMedia(current(driver, drive.id), disk, context())), { code: 'INCORRECT_STATE', data: { property: 'VDI' } })
  await driver.changeMedia(current(driver, drive.id), undefined, context())
  t.equal(current(driver, drive.id)['VDI'], undefined)
  t.notOk(ids(current(driver, disk), '$VBDs').includes(drive.id))
  const diskDrive = ids(vm, '$VBDs')[0] ?? ''
  t.match(await failure(driver.changeMedia(current(driver, diskDrive), undefined, context())), { code: 'INCORRECT_STATE', data: { property: 'is_cd_drive' } })
  t.same(problems(driver), [])
})
