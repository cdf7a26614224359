import t from 'tap'
import { decodeXmlRpc } from '../../src/xapi/xml-rpc.js'
import { startSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>
const GiB = 2 ** 30

const blank = (name: string) => ({
  name_label: name,
  name_description: 'made by VM.create',
  user_version: 1,
  is_a_template: false,
  memory_static_min: GiB / 2,
  memory_static_max: GiB,
  memory_dynamic_min: GiB,
  memory_dynamic_max: GiB,
  VCPUs_max: 2,
  VCPUs_at_startup: 2,
  actions_after_shutdown: 'destroy',
  actions_after_reboot: 'restart',
  actions_after_crash: 'restart',
  HVM_boot_policy: 'BIOS order',
  HVM_boot_params: { order: 'cd' },
  PV_args: '',
  other_config: { purpose: 'test' },
})

t.test('VM.create, then VBD and VIF create, plug, unplug and destroy, with XAPI\u2019s errors', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vm = await xapi.call<string>('VM.create', [session, blank('from scratch')])
  t.match(await xapi.call('VM.get_record', [session, vm]), {
    name_label: 'from scratch',
    name_description: 'made by VM.create',
    power_state: 'Halted',
    is_a_template: false,
    memory_static_max: GiB,
    memory_dynamic_max: GiB,
    VCPUs_max: 2,
    VCPUs_at_startup: 2,
    HVM_boot_policy: 'BIOS order',
    other_config: { purpose: 'test' },
    VBDs: [],
    VIFs: [],
  })
  t.same(await xapi.call('VM.get_allowed_VBD_devices', [session, vm]), Array.from({ length: 16 }, (_, i) => String(i)))
  t.same(await xapi.json('VM.create', [session, { ...blank('bad'), memory_dynamic_max: 2 * GiB }]), {
    error: ['MEMORY_CONSTRAINT_VIOLATION', 'Memory limits must satisfy: static_min <= dynamic_min <= dynamic_max <= static_max'],
  })

  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const sr = Object.entries(srs).find(([, r]) => r['content_type'] === 'user' && r['shared'] === true)?.[0]
  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'root', SR: sr, virtual_size: GiB, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const vbdArgs = { VM: vm, VDI: vdi, userdevice: '0', bootable: true, mode: 'RW', type: 'Disk', empty: false, other_config: {}, qos_algorithm_type: '', qos_algorithm_params: {} }
  const vbd = await xapi.call<string>('VBD.create', [session, vbdArgs])
  t.match(await xapi.call('VBD.get_record', [session, vbd]), { VM: vm, VDI: vdi, userdevice: '0', bootable: true, mode: 'RW', type: 'Disk', currently_attached: false, empty: false })
  t.same(await xapi.call('VM.get_VBDs', [session, vm]), [vbd])
  t.same(await xapi.call('VDI.get_VBDs', [session, vdi]), [vbd])
  t.same(await xapi.json('VBD.create', [session, vbdArgs]), { error: ['DEVICE_ALREADY_EXISTS', '0'] })
  t.same(await xapi.json('VBD.create', [session, { ...vbdArgs, userdevice: '1', type: 'CD', VDI: 'OpaqueRef:NULL', empty: true, mode: 'RW' }]), { error: ['VBD_CDS_MUST_BE_READONLY'] })
  t.same(await xapi.json('VBD.plug', [session, vbd]), { error: ['VM_BAD_POWER_STATE', vm, 'running', 'halted'] })
  t.same(await xapi.json('VBD.unplug', [session, vbd]), { error: ['VM_BAD_POWER_STATE', vm, 'running', 'halted'] })

  const networks = await xapi.call<Records>('network.get_all_records', [session])
  const network = Object.entries(networks).find(([, r]) => (r['PIFs'] as string[]).length > 0)?.[0]
  const vifArgs = { device: '', network, VM: vm, MAC: '', MTU: 1500, other_config: {}, qos_algorithm_type: '', qos_algorithm_params: {}, locking_mode: 'network_default', ipv4_allowed: [], ipv6_allowed: [] }
  const vif = await xapi.call<string>('VIF.create', [session, vifArgs])
  t.match(await xapi.call('VIF.get_record', [session, vif]), { VM: vm, network, device: '0', MAC: /^[0-9a-f][26ae](:[0-9a-f]{2}){5}$/, currently_attached: false })
  t.same(await xapi.call('VM.get_allowed_VIF_devices', [session, vm]), ['1', '2', '3', '4', '5', '6'])
  t.same(await xapi.json('VIF.create', [session, { ...vifArgs, device: '0' }]), { error: ['DEVICE_ALREADY_EXISTS', '0'] })
  t.same(await xapi.json('VIF.create', [session, { ...vifArgs, MAC: 'not-a-mac' }]), { error: ['MAC_INVALID', 'not-a-mac'] })
  t.same(await xapi.call('VM.get_VIFs', [session, vm]), [vif], 'the refusals made nothing')

  await xapi.call('VM.start', [session, vm, false, false])
  t.equal(await xapi.call('VBD.get_currently_attached', [session, vbd]), true, 'a start plugs every device')
  const extra = await xapi.call<string>('VDI.create', [session, { name_label: 'data', SR: sr, virtual_size: GiB, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const hot = await xapi.call<string>('VBD.create', [session, { ...vbdArgs, VDI: extra, userdevice: 'autodetect', bootable: false }])
  t.match(await xapi.call('VBD.get_record', [session, hot]), { userdevice: '1', currently_attached: false }, 'on a running VM a new drive starts unplugged')
  const task = await xapi.call<string>('Async.VBD.plug', [session, hot])
  t.match(await taskOutcome(xapi, session, task), { status: 'success', result: '' })
  t.equal(await xapi.call('VBD.get_currently_attached', [session, hot]), true)
  t.same(await xapi.json('VBD.plug', [session, hot]), { error: ['DEVICE_ALREADY_ATTACHED', hot] })
  t.same(await xapi.json('VBD.destroy', [session, hot]), { error: ['OPERATION_NOT_ALLOWED', 'VBD currently attached to a running VM'] })
  t.equal(await xapi.call('VBD.unplug', [session, hot]), '')
  t.same(await xapi.json('VBD.unplug', [session, hot]), { error: ['DEVICE_ALREADY_DETACHED', hot] })
  t.equal(await xapi.call('VBD.destroy', [session, hot]), '')
  t.same(await xapi.json('VBD.get_record', [session, hot]), { error: ['HANDLE_INVALID', 'VBD', hot] })
  t.match(await xapi.call('VDI.get_record', [session, extra]), { VBDs: [] }, 'its disk stays')

  t.equal(await xapi.call('VIF.unplug', [session, vif]), '')
  t.equal(await xapi.call('VIF.get_currently_attached', [session, vif]), false)
  t.same(await xapi.json('VIF.unplug', [session, vif]), { error: ['DEVICE_ALREADY_DETACHED', vif] })
  const plugged = await taskOutcome(xapi, session, await xapi.call<string>('Async.VIF.plug', [session, vif]))
  t.match(plugged, { status: 'success' })
  t.same(await xapi.json('VIF.plug', [session, vif]), { error: ['DEVICE_ALREADY_ATTACHED', vif] })
  await xapi.call('VIF.unplug', [session, vif])
  t.equal(await xapi.call('VIF.destroy', [session, vif]), '')
  t.same(await xapi.call('VM.get_VIFs', [session, vm]), [])

  const iso = Object.entries(srs).find(([, r]) => r['content_type'] === 'iso' && (r['VDIs'] as string[]).length > 0)?.[1]?.['VDIs'] as string[] | undefined
  const cd = await xapi.call<string>('VBD.create', [session, { ...vbdArgs, VDI: 'OpaqueRef:NULL', empty: true, type: 'CD', mode: 'RO', userdevice: '3', bootable: false }])
  t.match(await xapi.call('VBD.get_record', [session, cd]), { type: 'CD', mode: 'RO', empty: true, VDI: 'OpaqueRef:NULL' })
  t.equal(await xapi.call('VBD.insert', [session, cd, iso?.[0]]), '', 'a disk goes into the CD drive of a running VM')
  t.match(await xapi.call('VBD.get_record', [session, cd]), { empty: false, VDI: iso?.[0] })
  t.same(await xapi.json('VBD.insert', [session, cd, iso?.[0]]), { error: ['VBD_NOT_EMPTY', cd] })
  t.same(await xapi.json('VBD.insert', [session, vbd, iso?.[0]]), { error: ['VBD_NOT_REMOVABLE_MEDIA', vbd] })
  t.equal(await xapi.call('VBD.eject', [session, cd]), '')
  t.match(await xapi.call('VBD.get_record', [session, cd]), { empty: true, VDI: 'OpaqueRef:NULL' })
  t.same(await xapi.json('VBD.eject', [session, cd]), { error: ['VBD_IS_EMPTY', cd] })

  const created = await taskOutcome(xapi, session, await xapi.call<string>('Async.VM.create', [session, blank('async')]))
  t.match(created, { status: 'success' })
  t.equal(await xapi.call('VM.get_name_label', [session, String(decodeXmlRpc(String(created['result'])))]), 'async')
  const over = await xapi.xml('VBD.create', [session, { ...vbdArgs, VM: vm, VDI: extra, userdevice: '5', bootable: false }])
  t.ok('value' in over, 'over XML-RPC too')
  const methods = await xapi.call<string[]>('system.listMethods', [])
  for (const method of ['VBD.create', 'VBD.destroy', 'VBD.plug', 'VBD.unplug', 'VBD.insert', 'VBD.eject', 'VIF.create', 'VIF.destroy', 'VIF.plug', 'VIF.unplug', 'VM.create']) {
    t.ok(methods.includes(method) && methods.includes(`Async.${method}`), method)
  }
})
