import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { branchLab } from '../helpers/branch-lab.js'
import { PASSWORD, startSimulator, taskOutcome, type RunningSimulator } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>

const one = async (xapi: RunningSimulator, session: string, cls: string): Promise<[string, Record<string, unknown>]> => {
  const [entry] = Object.entries(await xapi.call<Records>(`${cls}.get_all_records`, [session]))
  if (entry === undefined) throw new Error(`no ${cls}`)
  return entry
}

const named = async (xapi: RunningSimulator, session: string, cls: string, name: string): Promise<string> =>
  Object.entries(await xapi.call<Records>(`${cls}.get_all_records`, [session])).find(([, record]) => record['name_label'] === name)?.[0] ?? ''

/** What a refused join must leave as it was, on both sides. */
async function state(master: RunningSimulator, masterSession: string, joiner: RunningSimulator, joinerSession: string): Promise<unknown> {
  const refs = async (xapi: RunningSimulator, session: string, cls: string): Promise<string[]> => (await xapi.call<string[]>(`${cls}.get_all`, [session])).sort()
  return {
    master: { hosts: await refs(master, masterSession, 'host'), srs: await refs(master, masterSession, 'SR'), pifs: await refs(master, masterSession, 'PIF') },
    joiner: { pools: await refs(joiner, joinerSession, 'pool'), hosts: await refs(joiner, joinerSession, 'host'), vms: await refs(joiner, joinerSession, 'VM') },
  }
}

t.test('pool.join: the joining host logs in to the master over XAPI and is refused as XAPI refuses it, nothing changed on either side', async (t) => {
  const master = await startSimulator(t)
  const joiner = await startSimulator(t, { spec: branchLab() })
  const address = new URL(master.url).host
  const [m, j] = [await master.login(), await joiner.login()]
  const before = await state(master, m, joiner, j)
  const [hostRef] = await one(joiner, j, 'host')

  t.same(await joiner.json('pool.join', [j, address, 'root', 'wrong']), { error: ['SESSION_AUTHENTICATION_FAILED', 'root', 'Authentication failure'] })
  t.same(await joiner.json('pool.join', [j, '127.0.0.1:1', 'root', PASSWORD]), { error: ['JOINING_HOST_CONNECTION_FAILED'] }, 'no master answers there')
  t.same(await master.json('pool.join', [m, new URL(joiner.url).host, 'root', PASSWORD]), { error: ['JOINING_HOST_CANNOT_BE_MASTER_OF_OTHER_HOSTS'] })
  t.match(await joiner.json('pool.join', [j, new URL(joiner.url).host, 'root', PASSWORD]), { error: ['OPERATION_NOT_ALLOWED', 'Host cannot become slave of itself'] })
  t.match(await joiner.json('pool.join', [j, address, 'root', PASSWORD]), { error: ['OPERATION_NOT_ALLOWED', /branch-app/] }, 'a halted VM: XAPI would drop it, the simulator refuses')

  const vm = await named(joiner, j, 'VM', 'branch-app')
  t.equal(await joiner.call('VM.start', [j, vm, false, false]), '')
  t.same(await joiner.json('pool.join', [j, address, 'root', PASSWORD]), { error: ['JOINING_HOST_CANNOT_HAVE_RUNNING_VMS'] })
  t.equal(await joiner.call('VM.hard_shutdown', [j, vm]), '')

  const lab = joiner.simulator.services.driver
  const host = lab.getObject(String(joiner.simulator.services.feed.labRecord(hostRef)?.id))
  if (host === undefined) throw new Error('no lab host')
  lab.applyChanges([{ kind: 'update', object: { ...host, version: '8.2.1' } }])
  t.same(await joiner.json('pool.join', [j, address, 'root', PASSWORD]), { error: ['HOSTS_NOT_HOMOGENEOUS', 'Software version differs'] })
  t.match(await joiner.json('pool.join_force', [j, address, 'root', PASSWORD]), { error: ['OPERATION_NOT_ALLOWED', /branch-app/] }, 'join_force passes the version check only')
  t.same(await state(master, m, joiner, j), before, 'nothing changed')

  const shared = await startSimulator(t, { spec: branchLab({ shared: true }) })
  const s = await shared.login()
  t.same(await shared.json('pool.join', [s, address, 'root', PASSWORD]), { error: ['JOINING_HOST_CANNOT_CONTAIN_SHARED_SRS'] })
  t.same((await shared.call<string[]>('pool.get_all', [s])).length, 1)
})

t.test('pool.join: the host, its PIFs and local SR with its disks move to the master; the joiner answers HOST_IS_SLAVE; events on both sides', async (t) => {
  const master = await startSimulator(t)
  const joiner = await startSimulator(t, { spec: branchLab() })
  const address = new URL(master.url).host
  const [m, j] = [await master.login(), await joiner.login()]
  const [hostRef, hostRecord] = await one(joiner, j, 'host')
  const [oldPool] = await one(joiner, j, 'pool')
  const local = await named(joiner, j, 'SR', 'Branch local storage')
  const localFolder = join(joiner.dataDir, 'srs', String(joiner.simulator.services.feed.labRecord(local)?.id))
  for (const vm of await joiner.call<string[]>('VM.get_all', [j])) {
    const record = await joiner.call<Record<string, unknown>>('VM.get_record', [j, vm])
    if (record['is_control_domain'] !== true) await joiner.call('VM.destroy', [j, vm])
  }
  const vdi = await joiner.call<string>('VDI.create', [j, { name_label: 'kept', SR: local, virtual_size: 2 ** 21, type: 'user', sharable: false, read_only: false, other_config: {} }])
  const bytes = randomBytes(2 ** 21)
  const upload = await joiner.call<string>('task.create', [j, 'upload', ''])
  await (await fetch(`${joiner.url}/import_raw_vdi?session_id=${j}&task_id=${upload}&vdi=${vdi}&format=raw`, { method: 'PUT', body: bytes })).arrayBuffer()
  t.match(await taskOutcome(joiner, j, upload), { status: 'success' })

  const { token: masterToken } = await master.call<{ token: string }>('event.from', [m, ['host', 'SR', 'VDI'], '', 0])
  const { token: joinerToken } = await joiner.call<{ token: string }>('event.from', [j, ['pool', 'host'], '', 0])
  const waiting = joiner.json('event.from', [j, ['pool'], joinerToken, 60])

  const methods = await joiner.call<string[]>('system.listMethods', [])
  t.ok(['pool.join', 'pool.join_force', 'Async.pool.join', 'Async.pool.join_force'].every((method) => methods.includes(method)), 'each also as Async.')
  t.equal(await joiner.call('pool.join', [j, address, 'root', PASSWORD]), '')

  const hosts = await master.call<Records>('host.get_all_records', [m])
  t.match(hosts[hostRef], { uuid: hostRecord['uuid'], name_label: 'branch-01', address: '127.0.0.4' }, 'the host is the master\u2019s, on an address of its own')
  const [masterPool] = await one(master, m, 'pool')
  t.match(await master.call('SR.get_record', [m, local]), { name_label: 'Branch local storage', shared: false, VDIs: [vdi] })
  const pifs = await Promise.all((hosts[hostRef]?.['PIFs'] as string[]).map((pif) => master.call<Record<string, unknown>>('PIF.get_record', [m, pif])))
  t.same(pifs.map((pif) => pif['device']).sort(), ['eth0', 'eth3'])
  t.ok((await master.call<Records>('SR.get_all_records', [m]))[local] !== undefined && masterPool !== '')
  const download = await fetch(`${master.url}/export_raw_vdi?session_id=${m}&vdi=${vdi}&format=raw`)
  t.equal(download.status, 200, 'the disk is served on the host\u2019s address, after the master\u2019s redirect')
  t.ok(Buffer.from(await download.arrayBuffer()).equals(bytes), 'its content came along')
  t.notOk(existsSync(localFolder), 'the joiner keeps no copy')

  const { events } = await master.call<{ events: Array<Record<string, unknown>> }>('event.from', [m, ['host', 'SR', 'VDI'], masterToken, 0])
  t.ok(events.some((event) => event['class'] === 'host' && event['operation'] === 'add' && event['ref'] === hostRef), 'the master\u2019s event.from adds the host')
  t.ok(events.some((event) => event['class'] === 'vdi' && event['operation'] === 'add' && event['ref'] === vdi))
  const ended = await waiting
  t.ok('result' in ended || ('error' in ended && ended.error[0] === 'SESSION_INVALID'), 'the joiner\u2019s event.from ends')
  if ('result' in ended) t.ok((ended.result as { events: Array<Record<string, unknown>> }).events.some((event) => event['operation'] === 'del' && event['ref'] === oldPool), 'its pool is deleted')

  t.same(await joiner.json('session.login_with_password', ['root', PASSWORD, '1.0', 'test']), { error: ['HOST_IS_SLAVE', address] }, 'the joiner sends clients to the master')
  t.same(await joiner.json('pool.get_all', [j]), { error: ['HOST_IS_SLAVE', address] })
})
