import t from 'tap'
import { decodeXmlRpc } from '../../src/xapi/xml-rpc.js'
import { startSimulator, type RunningSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>

async function pick(xapi: RunningSimulator, session: string, test: (vm: Record<string, unknown>) => boolean): Promise<[string, Record<string, unknown>]> {
  const found = Object.entries(await xapi.call<Records>('VM.get_all_records', [session])).find(([, vm]) => test(vm))
  if (found === undefined) throw new Error('no such VM in the demo lab')
  return found
}

const ordinary = (state: string) => (vm: Record<string, unknown>) => vm['power_state'] === state && vm['is_a_template'] === false && vm['is_control_domain'] === false

t.test('VM power actions run on the lab; a wrong state answers VM_BAD_POWER_STATE [vm, expected, actual]', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [ref, vm] = await pick(xapi, session, ordinary('Halted'))
  t.equal(await xapi.call('VM.start', [session, ref, false, false]), '')
  t.equal(await xapi.call('VM.get_power_state', [session, ref]), 'Running')
  t.equal(xapi.simulator.services.driver.getObject(String(vm['uuid']))?.['power_state'], 'Running', 'in the lab too')
  const host = await xapi.call<string>('VM.get_resident_on', [session, ref])
  t.ok((await xapi.call<string[]>('host.get_resident_VMs', [session, host])).includes(ref))
  t.same(await xapi.json('VM.start', [session, ref, false, false]), { error: ['VM_BAD_POWER_STATE', ref, 'halted', 'running'] })
  t.same(await xapi.xml('VM.start', [session, ref, false, false]), { error: ['VM_BAD_POWER_STATE', ref, 'halted', 'running'] })
  t.equal(await xapi.call('VM.hard_shutdown', [session, ref]), '')
  t.equal(await xapi.call('VM.get_power_state', [session, ref]), 'Halted')
  const [template] = await pick(xapi, session, (r) => r['is_a_template'] === true && r['is_a_snapshot'] === false)
  t.same(await xapi.json('VM.start', [session, template, false, false]), { error: ['VM_IS_TEMPLATE', template] })
  t.same(await xapi.json('VM.start', [session, 'OpaqueRef:nope', false, false]), { error: ['HANDLE_INVALID', 'VM', 'OpaqueRef:nope'] })
  t.same(await xapi.json('VM.start', [session, ref]), { error: ['MESSAGE_PARAMETER_COUNT_MISMATCH', 'VM.start', '4', '2'] })
  t.same(await xapi.json('VM.start', [session, ref, 'no', false]), { error: ['FIELD_TYPE_ERROR', 'start_paused'] })
  t.equal(await xapi.call('VM.get_power_state', [session, ref]), 'Halted', 'the refused calls changed nothing')
})

t.test('Async calls answer a task that progresses and settles; task.result is XML-RPC text even over JSON-RPC', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [ref] = await pick(xapi, session, ordinary('Running'))
  const task = await xapi.call<string>('Async.VM.snapshot', [session, ref, 'before upgrade'])
  t.match(task, /^OpaqueRef:/)
  t.match(await xapi.call('task.get_record', [session, task]), { name_label: 'Async.VM.snapshot', status: 'pending' })
  const done = await taskOutcome(xapi, session, task)
  t.match(done, { status: 'success', progress: 1, error_info: [] })
  t.match(done['result'], /^<value>OpaqueRef:[^<]+<\/value>$/)
  const snapshot = String(decodeXmlRpc(String(done['result'])))
  t.match(await xapi.call('VM.get_record', [session, snapshot]), { is_a_snapshot: true, is_a_template: true, snapshot_of: ref, name_label: 'before upgrade' })
  t.ok((await xapi.call<string[]>('VM.get_snapshots', [session, ref])).includes(snapshot))

  const failed = await taskOutcome(xapi, session, await xapi.call<string>('Async.VM.start', [session, ref, false, false]))
  t.match(failed, { status: 'failure', result: '', error_info: ['VM_BAD_POWER_STATE', ref, 'halted', 'running'] })

  const shutdownTask = await xapi.call<string>('Async.VM.clean_shutdown', [session, ref])
  t.match(await taskOutcome(xapi, session, shutdownTask), { status: 'success', result: '' }, 'void results are empty strings')
  await xapi.call('task.destroy', [session, shutdownTask])
  t.equal((await xapi.call<string[]>('task.get_all', [session])).length, 2, 'a destroyed task is gone')
  t.same(await xapi.json('Async.VM.get_record', [session, ref]), { error: ['MESSAGE_METHOD_UNKNOWN', 'Async.VM.get_record'] })
})

t.test('task.cancel stops an operation in flight and leaves the VM as it was', async (t) => {
  const xapi = await startSimulator(t, { stepDelay: 60_000 })
  const session = await xapi.login()
  const [ref] = await pick(xapi, session, ordinary('Halted'))
  const task = await xapi.call<string>('Async.VM.start', [session, ref, false, false])
  t.equal(await xapi.call('task.cancel', [session, task]), '')
  const done = await taskOutcome(xapi, session, task)
  t.match(done, { status: 'cancelled', error_info: ['TASK_CANCELLED', task] })
  t.equal(await xapi.call('VM.get_power_state', [session, ref]), 'Halted')
  t.same(await xapi.json('task.cancel', [session, task]), { error: ['OPERATION_NOT_ALLOWED', `task ${task} is not pending`] })
  t.same(await xapi.json('task.cancel', [session, 'OpaqueRef:nope']), { error: ['HANDLE_INVALID', 'task', 'OpaqueRef:nope'] })
})

t.test('VDI create, resize and destroy, SR scan, host disable and enable', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const [sr] = Object.entries(srs).find(([, r]) => r['content_type'] === 'user' && r['shared'] === true) ?? []
  if (sr === undefined) throw new Error('a shared user SR')
  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'scratch', name_description: '', SR: sr, virtual_size: 1 << 30, type: 'user', sharable: false, read_only: false, other_config: {} }])
  t.match(await xapi.call('VDI.get_record', [session, vdi]), { name_label: 'scratch', virtual_size: 1 << 30, SR: sr })
  t.ok((await xapi.call<string[]>('SR.get_VDIs', [session, sr])).includes(vdi), 'the SR lists it')
  await xapi.call('VDI.resize', [session, vdi, 2 * (1 << 30)])
  t.equal(await xapi.call('VDI.get_virtual_size', [session, vdi]), 2 * (1 << 30))
  t.same(await xapi.json('VDI.resize', [session, vdi, 1024]), { error: ['INVALID_VALUE', 'size', '1024'] })
  t.equal(await xapi.call('VDI.get_virtual_size', [session, vdi]), 2 * (1 << 30), 'a refused shrink changed nothing')
  t.same(await xapi.json('VDI.create', [session, { name_label: 'x', SR: sr, virtual_size: 0 }]), { error: ['INVALID_VALUE', 'virtual_size', '0'] })
  await xapi.call('VDI.destroy', [session, vdi])
  t.same(await xapi.json('VDI.get_record', [session, vdi]), { error: ['HANDLE_INVALID', 'VDI', vdi] })

  t.equal(await xapi.call('SR.scan', [session, sr]), '')
  const host = (await xapi.call<string[]>('host.get_all', [session]))[1]
  await xapi.call('host.disable', [session, host])
  t.equal(await xapi.call('host.get_enabled', [session, host]), false)
  await xapi.call('host.enable', [session, host])
  t.equal(await xapi.call('host.get_enabled', [session, host]), true)
  const methods = await xapi.call<string[]>('system.listMethods', [])
  t.ok(['Async.VM.start', 'Async.VM.snapshot', 'Async.VDI.create', 'VM.revert'].every((m) => methods.includes(m)))
})

t.test('VM.clone of a halted VM, VM.revert to a snapshot and VM.destroy', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [ref, vm] = await pick(xapi, session, ordinary('Halted'))
  const clone = await xapi.call<string>('VM.clone', [session, ref, 'the clone'])
  t.match(await xapi.call('VM.get_record', [session, clone]), { name_label: 'the clone', power_state: 'Halted', is_a_template: false })
  const snapshot = await xapi.call<string>('VM.snapshot', [session, clone, 'snap'])
  await xapi.call('VM.set_name_label', [session, clone, 'changed after'])
  t.equal(await xapi.call('VM.revert', [session, snapshot]), '')
  t.same(await xapi.json('VM.revert', [session, clone]), { error: ['OPERATION_NOT_ALLOWED', `${clone} is not a snapshot`] })
  const vbds = await xapi.call<string[]>('VM.get_VBDs', [session, clone])
  await xapi.call('VM.destroy', [session, clone])
  t.same(await xapi.json('VM.get_record', [session, clone]), { error: ['HANDLE_INVALID', 'VM', clone] })
  for (const vbd of vbds) t.same(await xapi.json('VBD.get_record', [session, vbd]), { error: ['HANDLE_INVALID', 'VBD', vbd] })
  t.equal(await xapi.call('VM.get_name_label', [session, ref]), vm['name_label'], 'the original is untouched')
})

t.test('VM.pool_migrate moves a running VM; host.evacuate moves every guest off a host, unless one is pinned to a local SR', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const hosts = await xapi.call<Records>('host.get_all_records', [session])
  const vms = await xapi.call<Records>('VM.get_all_records', [session])
  const vbds = await xapi.call<Records>('VBD.get_all_records', [session])
  const vdis = await xapi.call<Records>('VDI.get_all_records', [session])
  const srs = await xapi.call<Records>('SR.get_all_records', [session])
  const pinned = (vm: string): boolean =>
    (vms[vm]?.['VBDs'] as string[]).some((vbd) => {
      const vdi = vdis[String(vbds[vbd]?.['VDI'])]
      return vdi !== undefined && srs[String(vdi['SR'])]?.['shared'] === false
    })
  const guests = (host: string): string[] => (hosts[host]?.['resident_VMs'] as string[]).filter((vm) => vms[vm]?.['is_control_domain'] === false && vms[vm]?.['power_state'] === 'Running')
  const free = Object.keys(hosts).find((host) => guests(host).length > 0 && !guests(host).some(pinned))
  const stuck = Object.keys(hosts).find((host) => guests(host).some(pinned))
  if (free === undefined || stuck === undefined) throw new Error('the demo lab has a host whose guests can all leave, and one with a guest on a local SR')

  const [guest] = guests(free)
  const target = Object.keys(hosts).find((host) => host !== free && host !== stuck)
  await xapi.call('VM.pool_migrate', [session, guest, target, { live: 'true' }])
  t.equal(await xapi.call('VM.get_resident_on', [session, guest]), target, 'pool_migrate moved it')
  t.same(await xapi.json('VM.pool_migrate', [session, guest, target, {}]), { error: ['OPERATION_NOT_ALLOWED', `invalid parameters: body.hostId the VM already runs on host ${String(hosts[String(target)]?.['uuid'])}`] })

  const evacuation = await taskOutcome(xapi, session, await xapi.call<string>('Async.host.evacuate', [session, free]))
  t.match(evacuation, { status: 'success', progress: 1 })
  const live = ['Running', 'Paused']
  const left = await xapi.call<string[]>('host.get_resident_VMs', [session, free])
  t.same(left.filter((vm) => vms[vm]?.['is_control_domain'] === false && live.includes(String(vms[vm]?.['power_state']))), [], 'no running guest is left on it (a suspended one stays, as the lab keeps it)')

  const refused = await taskOutcome(xapi, session, await xapi.call<string>('Async.host.evacuate', [session, stuck]))
  t.match(refused, { status: 'failure', error_info: ['NO_HOSTS_AVAILABLE'] })
  t.same(await xapi.json('host.evacuate', [session, 'OpaqueRef:nope']), { error: ['HANDLE_INVALID', 'host', 'OpaqueRef:nope'] })
})

t.test('VM.copy of a halted VM: its disks copied to the SR given, or beside the originals for the null ref; refusals change nothing', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const disksOf = async (vm: string): Promise<Array<Record<string, unknown>>> => {
    const out: Array<Record<string, unknown>> = []
    for (const vbd of await xapi.call<string[]>('VM.get_VBDs', [session, vm])) {
      const vdi = await xapi.call<string>('VBD.get_VDI', [session, vbd])
      if (vdi !== 'OpaqueRef:NULL') out.push({ ref: vdi, ...(await xapi.call<Record<string, unknown>>('VDI.get_record', [session, vdi])) })
    }
    return out
  }
  const [ref] = await pick(xapi, session, ordinary('Halted'))
  const originals = await disksOf(ref)
  t.ok(originals.length > 0, 'the VM has disks')

  const beside = await xapi.call<string>('VM.copy', [session, ref, 'beside', 'OpaqueRef:NULL'])
  t.match(await xapi.call('VM.get_record', [session, beside]), { name_label: 'beside', power_state: 'Halted', is_a_template: false })
  const besideDisks = await disksOf(beside)
  t.same(besideDisks.map((vdi) => vdi['SR']), originals.map((vdi) => vdi['SR']), 'on the originals\u2019 SRs')
  t.notOk(besideDisks.some((vdi) => originals.some((original) => original['ref'] === vdi['ref'])), 'new disks')

  const srs = await xapi.call<Record<string, Record<string, unknown>>>('SR.get_all_records', [session])
  const poolOf = (objectRef: string): unknown => xapi.simulator.services.feed.labRecord(objectRef)?.['$pool']
  const [target] = Object.entries(srs).find(([sr, record]) => poolOf(sr) === poolOf(ref) && record['content_type'] === 'user' && originals.every((vdi) => vdi['SR'] !== sr)) ?? []
  if (target === undefined) throw new Error('no other SR for disks in the VM\u2019s pool of the demo lab')
  const task = await xapi.call<string>('Async.VM.copy', [session, ref, 'elsewhere', target])
  const done = await taskOutcome(xapi, session, task)
  t.match(done, { status: 'success', progress: 1 })
  const elsewhere = String(decodeXmlRpc(String(done['result'])))
  t.same((await disksOf(elsewhere)).map((vdi) => vdi['SR']), originals.map(() => target), 'every disk on the SR given')

  const count = (await xapi.call<string[]>('VM.get_all', [session])).length
  const before = await disksOf(ref)
  const [running] = await pick(xapi, session, ordinary('Running'))
  t.same(await xapi.json('VM.copy', [session, running, 'no', 'OpaqueRef:NULL']), { error: ['VM_BAD_POWER_STATE', running, 'halted', 'running'] })
  t.same(await xapi.json('VM.copy', [session, ref, 'no', 'OpaqueRef:nope']), { error: ['HANDLE_INVALID', 'SR', 'OpaqueRef:nope'] })
  t.equal((await xapi.call<string[]>('VM.get_all', [session])).length, count, 'the refused copies made nothing')
  t.same(await disksOf(ref), before, 'nor changed the original\u2019s disks')
})
