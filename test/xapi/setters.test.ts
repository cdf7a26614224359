import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openSimulator } from '../../src/simulator/simulator.js'
import { PASSWORD, startSimulator, type RunningSimulator, taskOutcome } from '../helpers/xapi-simulator.js'

type Obj = Record<string, unknown>
const MiB = 2 ** 20
const VCPUS_RULE = 'VCPU values must satisfy: 0 < VCPUs_at_startup ≤ VCPUs_max'
const MEMORY_RULE = 'Memory limits must satisfy: static_min <= dynamic_min <= dynamic_max <= static_max'

async function named(xapi: RunningSimulator, session: string, cls: string, name: string): Promise<string> {
  const [ref] = await xapi.call<string[]>(`${cls}.get_by_name_label`, [session, name])
  if (ref === undefined) throw new Error(`no ${cls} ${name} in the demo lab`)
  return ref
}

/** The lab record behind a ref: what Keel's REST API and a restart see. */
const lab = (xapi: RunningSimulator, ref: string): Obj => {
  const record = xapi.simulator.services.feed.labRecord(ref)
  if (record === undefined) throw new Error(`no lab record for ${ref}`)
  return record
}

t.test('VM vCPUs: the maximum only while halted, at startup up to the maximum, the live count only while running', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const halted = await named(xapi, session, 'VM', 'staging-app')
  const max = await xapi.call<number>('VM.get_VCPUs_max', [session, halted])
  t.equal(await xapi.call('VM.set_VCPUs_max', [session, halted, max + 2]), '')
  t.equal(await xapi.call('VM.set_VCPUs_at_startup', [session, halted, max + 1]), '')
  t.match(await xapi.call('VM.get_record', [session, halted]), { VCPUs_max: max + 2, VCPUs_at_startup: max + 1 })
  t.same(lab(xapi, halted)['CPUs'], { max: max + 2, number: max + 1 }, 'in the lab')

  const before = await xapi.call('VM.get_record', [session, halted])
  t.same(await xapi.json('VM.set_VCPUs_at_startup', [session, halted, max + 3]), { error: ['INVALID_VALUE', VCPUS_RULE, String(max + 3)] })
  t.same(await xapi.json('VM.set_VCPUs_at_startup', [session, halted, 0]), { error: ['INVALID_VALUE', VCPUS_RULE, '0'] })
  t.same(await xapi.json('VM.set_VCPUs_max', [session, halted, max]), { error: ['INVALID_VALUE', VCPUS_RULE, String(max)] }, 'below VCPUs_at_startup')
  t.same(await xapi.json('VM.set_VCPUs_max', [session, halted, 'many']), { error: ['FIELD_TYPE_ERROR', 'value'] })
  t.same(await xapi.json('VM.set_VCPUs_number_live', [session, halted, 1]), { error: ['VM_BAD_POWER_STATE', halted, 'running', 'halted'] })
  t.same(await xapi.call('VM.get_record', [session, halted]), before, 'the refused calls changed nothing')
  t.same(lab(xapi, halted)['CPUs'], { max: max + 2, number: max + 1 })

  const running = await named(xapi, session, 'VM', 'web-01')
  const runningBefore = await xapi.call<Obj>('VM.get_record', [session, running])
  const runningMax = Number(runningBefore['VCPUs_max'])
  t.same(await xapi.json('VM.set_VCPUs_max', [session, running, runningMax + 1]), { error: ['VM_BAD_POWER_STATE', running, 'halted', 'running'] })
  t.same(await xapi.json('VM.set_VCPUs_number_live', [session, running, runningMax + 1]), { error: ['INVALID_VALUE', VCPUS_RULE, String(runningMax + 1)] })
  t.same(await xapi.call('VM.get_record', [session, running]), runningBefore, 'the refused calls changed nothing')
  t.equal(await xapi.call('VM.set_VCPUs_number_live', [session, running, 1]), '')
  t.match(await xapi.call('VM.get_record', [session, running]), { VCPUs_max: runningMax, VCPUs_at_startup: 1 })
  t.match(await xapi.call('VM_metrics.get_record', [session, runningBefore['metrics']]), { VCPUs_number: 1 }, 'the guest runs with them now')
})

t.test('VM memory: static limits only while halted, in XAPI\u2019s order, the dynamic range live too', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const halted = await named(xapi, session, 'VM', 'staging-app')
  t.equal(await xapi.call('VM.set_memory_limits', [session, halted, 256 * MiB, 4096 * MiB, 1024 * MiB, 2048 * MiB]), '')
  t.match(await xapi.call('VM.get_record', [session, halted]), {
    memory_static_min: 256 * MiB,
    memory_static_max: 4096 * MiB,
    memory_dynamic_min: 1024 * MiB,
    memory_dynamic_max: 2048 * MiB,
  })
  t.match(lab(xapi, halted)['memory'], { static: [256 * MiB, 4096 * MiB], dynamic: [1024 * MiB, 2048 * MiB] }, 'in the lab')
  t.equal(await xapi.call('VM.set_memory', [session, halted, 3072 * MiB]), '')
  t.match(await xapi.call('VM.get_record', [session, halted]), { memory_static_min: 256 * MiB, memory_static_max: 3072 * MiB, memory_dynamic_min: 3072 * MiB, memory_dynamic_max: 3072 * MiB })
  t.equal(await xapi.call('VM.set_memory_static_range', [session, halted, 512 * MiB, 4096 * MiB]), '')
  t.equal(await xapi.call('VM.set_memory_dynamic_range', [session, halted, 1024 * MiB, 4096 * MiB]), '')
  t.equal(await xapi.call('VM.set_memory_dynamic_min', [session, halted, 2048 * MiB]), '')
  t.equal(await xapi.call('VM.set_memory_dynamic_max', [session, halted, 3072 * MiB]), '')
  t.equal(await xapi.call('VM.set_memory_static_min', [session, halted, 1024 * MiB]), '')
  t.equal(await xapi.call('VM.set_memory_static_max', [session, halted, 3072 * MiB]), '')
  t.match(lab(xapi, halted)['memory'], { static: [1024 * MiB, 3072 * MiB], dynamic: [2048 * MiB, 3072 * MiB] })

  const before = await xapi.call('VM.get_record', [session, halted])
  const violation = { error: ['MEMORY_CONSTRAINT_VIOLATION', MEMORY_RULE] }
  t.same(await xapi.json('VM.set_memory_limits', [session, halted, 256 * MiB, 1024 * MiB, 2048 * MiB, 2048 * MiB]), violation)
  t.same(await xapi.json('VM.set_memory_dynamic_range', [session, halted, 3072 * MiB, 2048 * MiB]), violation)
  t.same(await xapi.json('VM.set_memory_static_max', [session, halted, 2048 * MiB]), violation)
  t.same(await xapi.json('VM.set_memory_dynamic_min', [session, halted, 512 * MiB]), violation)
  t.same(await xapi.json('VM.set_memory', [session, halted, 0]), violation)
  t.same(await xapi.call('VM.get_record', [session, halted]), before, 'the refused calls changed nothing')

  const running = await named(xapi, session, 'VM', 'web-01')
  const live = await xapi.call<Obj>('VM.get_record', [session, running])
  const [staticMin, staticMax, dynamicMax] = [live['memory_static_min'], live['memory_static_max'], live['memory_dynamic_max']].map(Number) as [number, number, number]
  t.same(await xapi.json('VM.set_memory_static_max', [session, running, staticMax + 1024 * MiB]), { error: ['VM_BAD_POWER_STATE', running, 'halted', 'running'] })
  t.same(await xapi.json('VM.set_memory', [session, running, dynamicMax]), staticMax === dynamicMax ? { result: '' } : { error: ['VM_BAD_POWER_STATE', running, 'halted', 'running'] })
  t.same(await xapi.call('VM.get_record', [session, running]), live, 'nothing changed')
  const smaller = Math.max(staticMin, dynamicMax / 2)
  t.equal(await xapi.call('VM.set_memory_dynamic_range', [session, running, smaller, smaller]), '', 'a running guest balloons within its static range')
  t.match(await xapi.call('VM.get_record', [session, running]), { memory_dynamic_min: smaller, memory_dynamic_max: smaller, memory_target: smaller })
  t.match(lab(xapi, running)['memory'], { dynamic: [smaller, smaller], size: smaller })
})

t.test('HA restart priority, start delay, VDI and SR names, VIF locking: in the lab, bad values refused', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vm = await named(xapi, session, 'VM', 'staging-app')
  t.equal(await xapi.call('VM.set_ha_restart_priority', [session, vm, 'restart']), '')
  t.equal(await xapi.call('VM.set_start_delay', [session, vm, 30]), '')
  t.match(await xapi.call('VM.get_record', [session, vm]), { ha_restart_priority: 'restart', start_delay: 30 })
  t.match(lab(xapi, vm), { high_availability: 'restart', startDelay: 30 }, 'in the lab')
  const vmBefore = await xapi.call('VM.get_record', [session, vm])
  t.same(await xapi.json('VM.set_ha_restart_priority', [session, vm, 'sometimes']), { error: ['INVALID_VALUE', 'ha_restart_priority', 'sometimes'] })
  t.same(await xapi.json('VM.set_start_delay', [session, vm, -1]), { error: ['INVALID_VALUE', 'start_delay', '-1'] })
  t.same(await xapi.call('VM.get_record', [session, vm]), vmBefore, 'nothing changed')

  const vdi = await named(xapi, session, 'VDI', 'db-02 data')
  t.equal(await xapi.call('VDI.set_name_label', [session, vdi, 'warehouse']), '')
  t.equal(await xapi.call('VDI.set_name_description', [session, vdi, 'the big one']), '')
  t.match(lab(xapi, vdi), { name_label: 'warehouse', name_description: 'the big one' })
  const sr = await named(xapi, session, 'SR', 'NFS shared storage')
  t.equal(await xapi.call('SR.set_name_label', [session, sr, 'NAS']), '')
  t.equal(await xapi.call('SR.set_name_description', [session, sr, 'rack 2']), '')
  t.match(lab(xapi, sr), { name_label: 'NAS', name_description: 'rack 2' })
  t.same(await xapi.json('VDI.set_name_label', [session, 'OpaqueRef:nope', 'x']), { error: ['HANDLE_INVALID', 'VDI', 'OpaqueRef:nope'] })
  t.same(await xapi.json('SR.set_name_label', [session, sr, 7]), { error: ['FIELD_TYPE_ERROR', 'value'] })
  t.match(lab(xapi, sr), { name_label: 'NAS' }, 'nothing changed')

  const [vif] = await xapi.call<string[]>('VM.get_VIFs', [session, await named(xapi, session, 'VM', 'web-01')])
  if (vif === undefined) throw new Error('web-01 has no VIF')
  t.equal(await xapi.call('VIF.set_locking_mode', [session, vif, 'locked']), '')
  t.equal(await xapi.call('VIF.set_ipv4_allowed', [session, vif, ['10.0.0.9']]), '')
  t.equal(await xapi.call('VIF.set_ipv6_allowed', [session, vif, ['fd00::9']]), '')
  t.match(lab(xapi, vif), { lockingMode: 'locked', allowedIpv4Addresses: ['10.0.0.9'], allowedIpv6Addresses: ['fd00::9'] }, 'in the lab')
  const vifBefore = await xapi.call('VIF.get_record', [session, vif])
  t.same(await xapi.json('VIF.set_ipv4_allowed', [session, vif, ['10.0.0.10', 'not-an-ip']]), { error: ['INVALID_IP_ADDRESS_SPECIFIED', 'not-an-ip'] })
  t.same(await xapi.json('VIF.set_ipv6_allowed', [session, vif, ['10.0.0.10']]), { error: ['INVALID_IP_ADDRESS_SPECIFIED', '10.0.0.10'] })
  t.same(await xapi.json('VIF.set_locking_mode', [session, vif, 'sideways']), { error: ['FIELD_TYPE_ERROR', 'value'] })
  t.same(await xapi.call('VIF.get_record', [session, vif]), vifBefore, 'nothing changed')
})

t.test('each setter is listed, and served as Async too: its task settles, or fails with XAPI\u2019s error', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const methods = await xapi.call<string[]>('system.listMethods', [])
  for (const method of ['VM.set_VCPUs_max', 'VM.set_memory_limits', 'VM.set_memory_dynamic_range', 'VDI.set_name_label', 'SR.set_name_description', 'VIF.set_locking_mode']) {
    t.ok(methods.includes(method) && methods.includes(`Async.${method}`), method)
  }
  const vm = await named(xapi, session, 'VM', 'staging-app')
  const max = await xapi.call<number>('VM.get_VCPUs_max', [session, vm])
  const done = await taskOutcome(xapi, session, await xapi.call<string>('Async.VM.set_VCPUs_max', [session, vm, max + 1]))
  t.match(done, { status: 'success', result: '' })
  t.equal(await xapi.call('VM.get_VCPUs_max', [session, vm]), max + 1)
  const before = await xapi.call('VM.get_record', [session, vm])
  const failed = await taskOutcome(xapi, session, await xapi.call<string>('Async.VM.set_VCPUs_at_startup', [session, vm, max + 2]))
  t.match(failed, { status: 'failure', error_info: ['INVALID_VALUE', VCPUS_RULE, String(max + 2)] })
  t.same(await xapi.call('VM.get_record', [session, vm]), before, 'nothing changed')
})

t.test('over XML-RPC: ints as strings, failures in the Status struct', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const vm = await named(xapi, session, 'VM', 'staging-app')
  const max = await xapi.call<number>('VM.get_VCPUs_max', [session, vm])
  t.same(await xapi.xml('VM.set_VCPUs_max', [session, vm, String(max + 1)]), { value: '' })
  t.same(await xapi.xml('VM.set_memory_limits', [session, vm, String(512 * MiB), String(2048 * MiB), String(1024 * MiB), String(1024 * MiB)]), { value: '' })
  t.match(lab(xapi, vm), { CPUs: { max: max + 1 }, memory: { static: [512 * MiB, 2048 * MiB], dynamic: [1024 * MiB, 1024 * MiB] } })
  t.same(await xapi.xml('VM.set_VCPUs_at_startup', [session, vm, String(max + 2)]), { error: ['INVALID_VALUE', VCPUS_RULE, String(max + 2)] })
  t.same(await xapi.xml('VM.set_memory_dynamic_max', [session, vm, String(4096 * MiB)]), { error: ['MEMORY_CONSTRAINT_VIOLATION', MEMORY_RULE] })
  t.match(lab(xapi, vm), { CPUs: { max: max + 1 }, memory: { dynamic: [1024 * MiB, 1024 * MiB] } }, 'nothing changed')
})

t.test('a VIF\u2019s QoS rate limit and other_config `ethtool-tx` reach the lab as its rate limit and checksumming', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [vif] = await xapi.call<string[]>('VM.get_VIFs', [session, await named(xapi, session, 'VM', 'web-01')])
  if (vif === undefined) throw new Error('web-01 has no VIF')
  t.equal(await xapi.call('VIF.set_qos_algorithm_type', [session, vif, 'ratelimit']), '')
  t.notOk('rateLimit' in lab(xapi, vif), 'no limit before its rate')
  t.equal(await xapi.call('VIF.set_qos_algorithm_params', [session, vif, { kbps: '1000' }]), '')
  t.equal(await xapi.call('VIF.add_to_other_config', [session, vif, 'ethtool-tx', 'false']), '')
  t.match(lab(xapi, vif), { rateLimit: 1000, txChecksumming: false }, 'in the lab')
  t.match(await xapi.call('VIF.get_record', [session, vif]), { qos_algorithm_type: 'ratelimit', qos_algorithm_params: { kbps: '1000' }, other_config: { 'ethtool-tx': 'false' } })
  t.same(await xapi.json('VIF.add_to_other_config', [session, vif, 'ethtool-tx', 'true']), { error: ['MAP_DUPLICATE_KEY', 'VIF', 'other_config', vif, 'ethtool-tx'] })
  t.equal(await xapi.call('VIF.set_qos_algorithm_type', [session, vif, '']), '')
  t.equal(await xapi.call('VIF.remove_from_other_config', [session, vif, 'ethtool-tx']), '')
  t.notOk('rateLimit' in lab(xapi, vif), 'the limit lifted')
  t.equal(lab(xapi, vif)['txChecksumming'], true)
})

t.test('a VM\u2019s and a snapshot\u2019s other_config are kept with the lab, so a restart of the simulator keeps them, as XAPI\u2019s pool database does', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-xapi-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const run = async <T>(work: (call: <R>(method: string, params: unknown[]) => Promise<R>, session: string) => Promise<T>): Promise<T> => {
    const simulator = await openSimulator({ dataDir, password: PASSWORD, stepDelay: 1 })
    try {
      const url = await simulator.listen(0, '127.0.0.1')
      const call = async <R>(method: string, params: unknown[]): Promise<R> => {
        const response = await fetch(`${url}/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }) })
        const answer = (await response.json()) as { result?: R; error?: unknown }
        if (answer.error !== undefined) throw new Error(`${method}: ${JSON.stringify(answer.error)}`)
        return answer.result as R
      }
      return await work(call, await call<string>('session.login_with_password', ['root', PASSWORD, '1.0', 'test']))
    } finally {
      await simulator.close()
    }
  }
  const written = await run(async (call, session) => {
    const [vm] = await call<string[]>('VM.get_by_name_label', [session, 'staging-app'])
    if (vm === undefined) throw new Error('no staging-app in the demo lab')
    const snapshot = await call<string>('VM.snapshot', [session, vm, 'kept'])
    await call('VM.add_to_other_config', [session, vm, 'keel:note', 'kept'])
    await call('VM.add_to_other_config', [session, snapshot, 'keel:mark', 'ours'])
    await call('VM.add_to_other_config', [session, snapshot, 'keel:gone', 'soon'])
    await call('VM.remove_from_other_config', [session, snapshot, 'keel:gone'])
    return { vm, snapshot, vmOther: await call<Obj>('VM.get_other_config', [session, vm]), snapshotOther: await call<Obj>('VM.get_other_config', [session, snapshot]) }
  })
  t.match(written.vmOther, { 'keel:note': 'kept' })
  t.match(written.snapshotOther, { 'keel:mark': 'ours' })
  t.notOk('keel:gone' in written.snapshotOther, 'a removed key is gone')
  const reread = await run(async (call, session) => ({
    vmOther: await call<Obj>('VM.get_other_config', [session, written.vm]),
    snapshotOther: await call<Obj>('VM.get_other_config', [session, written.snapshot]),
  }))
  t.same(reread, { vmOther: written.vmOther, snapshotOther: written.snapshotOther }, 'the same after a restart')
})

t.test('network.destroy: refused while a VIF on it is plugged or a PIF is on it; an unused network goes', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const networks = await xapi.call<Record<string, Obj>>('network.get_all_records', [session])
  const attached = new Set(Object.entries(await xapi.call<Record<string, Obj>>('VIF.get_all_records', [session])).filter(([, vif]) => vif['currently_attached'] === true).map(([ref]) => ref))
  const pluggedOn = (network: Obj): string[] => (network['VIFs'] as string[]).filter((vif) => attached.has(vif))
  const used = Object.entries(networks).find(([, n]) => pluggedOn(n).length > 0)
  if (used === undefined) throw new Error('no network in use in the demo lab')
  const [usedRef, usedRecord] = used
  t.same(await xapi.json('network.destroy', [session, usedRef]), { error: ['NETWORK_CONTAINS_VIF', ...pluggedOn(usedRecord)] })
  for (const vif of pluggedOn(usedRecord)) await xapi.call('VIF.unplug', [session, vif])
  const unplugged = await xapi.call('network.get_record', [session, usedRef])
  t.same(await xapi.json('network.destroy', [session, usedRef]), { error: ['NETWORK_CONTAINS_PIF', ...(usedRecord['PIFs'] as string[])] }, 'its VIFs unplugged, its PIFs still hold it')
  t.same(await xapi.call('network.get_record', [session, usedRef]), unplugged, 'nothing changed')

  // A network of the pool with no PIF, made in the lab, and an unplugged VIF on it: both go.
  const driver = xapi.simulator.services.driver
  const labPool = [...driver.objectsOfType('pool')][0]
  if (labPool === undefined) throw new Error('no pool')
  const created = await driver.perform(labPool, 'create_internal_network', { name: 'scratch' }, { signal: new AbortController().signal, userId: 'test', progress: () => {} })
  const scratch = String(driver.getObject(created?.id ?? '')?.['_xapiRef'])
  const halted = await named(xapi, session, 'VM', 'staging-app')
  const vif = await xapi.call<string>('VIF.create', [
    session,
    { device: '', network: scratch, VM: halted, MAC: '', MTU: 1500, other_config: {}, qos_algorithm_type: '', qos_algorithm_params: {}, locking_mode: 'network_default', ipv4_allowed: [], ipv6_allowed: [] },
  ])
  const task = await xapi.call<string>('Async.network.destroy', [session, scratch])
  t.match(await taskOutcome(xapi, session, task), { status: 'success' })
  t.same(await xapi.json('network.get_record', [session, scratch]), { error: ['HANDLE_INVALID', 'network', scratch] })
  t.same(await xapi.json('VIF.get_record', [session, vif]), { error: ['HANDLE_INVALID', 'VIF', vif] }, 'its unplugged VIF went with it')
  t.notOk((await xapi.call<string[]>('VM.get_VIFs', [session, halted])).includes(vif))
})
