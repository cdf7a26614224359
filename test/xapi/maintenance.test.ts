import t from 'tap'
import { decodeXmlRpc } from '../../src/xapi/xml-rpc.js'
import { startSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>

t.test('a template cloned is a halted VM with no disk; VM.provision gives it the template\u2019s disks once', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const [template] = Object.entries(vms).find(([, r]) => r['is_a_template'] === true && r['name_label'] === 'Debian Bookworm 12') ?? []
  const [running] = Object.entries(vms).find(([, r]) => r['is_control_domain'] === false && r['power_state'] === 'Running') ?? []
  const task = await xapi.call<string>('Async.VM.clone', [session, template, 'from a template'])
  const outcome = await taskOutcome(xapi, session, task)
  t.equal(outcome['status'], 'success')
  const vm = String(decodeXmlRpc(String(outcome['result'])))
  t.match(await xapi.call('VM.get_record', [session, vm]), { name_label: 'from a template', power_state: 'Halted', is_a_template: false, VBDs: [] })
  t.equal(await xapi.call('VM.set_is_a_template', [session, vm, false]), '')

  t.equal(await xapi.call('VM.provision', [session, vm]), '')
  const vbds = await xapi.call<string[]>('VM.get_VBDs', [session, vm])
  t.ok(vbds.length > 0, 'the template\u2019s disks')
  t.match(await xapi.call('VBD.get_record', [session, vbds[0]]), { type: 'Disk', userdevice: '0', currently_attached: false })
  t.equal(await xapi.call('VM.provision', [session, vm]), '')
  t.same(await xapi.call('VM.get_VBDs', [session, vm]), vbds, 'provisioned once')
  t.same(await xapi.json('VM.provision', [session, running]), { error: ['VM_BAD_POWER_STATE', running, 'halted', 'running'] })

  const clones = await xapi.call<Records>('VM.get_all_records', [session])
  t.equal(Object.keys(clones).length, Object.keys(vms).length + 1, 'one VM more, and nothing else')
})

t.test('host maintenance messages, the trim plugin, VDI.pool_migrate and network.create, with XAPI\u2019s errors', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const pool = Object.values(await xapi.call<Records>('pool.get_all_records', [session]))[0] ?? {}
  const master = String(pool['master'])
  const hosts = await xapi.call<Records>('host.get_all_records', [session])
  const member = Object.keys(hosts).find((ref) => ref !== master) ?? ''

  t.equal(await xapi.call('host.restart_agent', [session, member]), '')
  t.equal(await xapi.call('PIF.scan', [session, member]), '')
  t.match(await xapi.json('pool.eject', [session, master]), { error: ['OPERATION_NOT_ALLOWED'] }, 'the master stays')
  t.match(await xapi.json('host.destroy', [session, member]), { error: ['OPERATION_NOT_ALLOWED'] }, 'a running host is not forgotten')
  t.ok((await xapi.call<string[]>('host.get_all', [session])).includes(member), 'the refusals changed nothing')

  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const [shared, sharedRecord] = Object.entries(srs).find(([, r]) => r['content_type'] === 'user' && r['shared'] === true) ?? []
  const [local] = Object.entries(srs).find(([, r]) => r['content_type'] === 'user' && r['shared'] === false) ?? []
  t.equal(await xapi.call('host.call_plugin', [session, master, 'trim', 'do_trim', { sr_uuid: sharedRecord?.['uuid'] }]), 'True')
  t.same(await xapi.json('host.call_plugin', [session, master, 'trim', 'do_trim', { sr_uuid: 'no-such-sr' }]), { error: ['UUID_INVALID', 'SR', 'no-such-sr'] })
  t.same(await xapi.json('host.call_plugin', [session, master, 'netdata.py', 'is_netdata_installed', {}]), { error: ['XENAPI_MISSING_PLUGIN', 'netdata.py'] })

  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'moving', SR: shared, virtual_size: 2 ** 20, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const copy = await xapi.call<string>('VDI.pool_migrate', [session, vdi, local, {}])
  t.match(await xapi.call('VDI.get_record', [session, copy]), { name_label: 'moving', SR: local })
  t.same(await xapi.json('VDI.get_record', [session, vdi]), { error: ['HANDLE_INVALID', 'VDI', vdi] }, 'the original is gone')
  t.match(await xapi.json('VDI.pool_migrate', [session, copy, local, {}]), { error: ['OPERATION_NOT_ALLOWED'] }, 'not to its own SR')

  const network = await xapi.call<string>('network.create', [session, { name_label: 'inside', name_description: 'VM to VM', MTU: 9000, other_config: {} }])
  t.match(await xapi.call('network.get_record', [session, network]), { name_label: 'inside', name_description: 'VM to VM', MTU: 9000, PIFs: [], bridge: /^xapi\d+$/ })
})
