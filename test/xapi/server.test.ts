import t from 'tap'
import { readFileSync, statSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { certificateFile } from '../../src/simulator/certificate.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

type Records = Record<string, Record<string, unknown>>

t.test('logins over each wire, and a session usable over the other', async (t) => {
  const xapi = await startSimulator(t)
  const xml = await xapi.xml('session.login_with_password', ['root', PASSWORD])
  t.ok('value' in xml && typeof xml.value === 'string' && xml.value.startsWith('OpaqueRef:'), 'XML-RPC login with two parameters')
  const session = 'value' in xml ? String(xml.value) : ''
  const vms = await xapi.json('VM.get_all', [session], '1.0')
  t.ok('result' in vms && Array.isArray(vms.result) && vms.result.length > 10, 'the XML-RPC session works over JSON-RPC v1')
  const record = await xapi.call<Record<string, unknown>>('session.get_record', [session, session])
  t.match(record, { is_local_superuser: true, auth_user_name: 'root', originator: 'unknown' })

  for (const [user, password] of [['root', 'wrong'], ['admin', PASSWORD]] as const) {
    t.same(await xapi.json('session.login_with_password', [user, password]), { error: ['SESSION_AUTHENTICATION_FAILED', user, 'Authentication failure'] }, `v2: ${user}`)
    t.same(await xapi.json('session.login_with_password', [user, password], '1.0'), { error: ['SESSION_AUTHENTICATION_FAILED', user, 'Authentication failure'] }, `v1: ${user}`)
    t.same(await xapi.xml('session.login_with_password', [user, password]), { error: ['SESSION_AUTHENTICATION_FAILED', user, 'Authentication failure'] }, `XML-RPC: ${user}`)
  }
  t.equal([...xapi.simulator.services.db.ofClass('session')].length, 1, 'failed logins open no session')

  await xapi.call('session.logout', [session])
  t.same(await xapi.json('VM.get_all', [session]), { error: ['SESSION_INVALID', session] })
  t.same(await xapi.xml('VM.get_all', [session]), { error: ['SESSION_INVALID', session] })
  t.same(await xapi.json('VM.get_all', ['OpaqueRef:made-up']), { error: ['SESSION_INVALID', 'OpaqueRef:made-up'] })
})

t.test('sessions past 500 for one originator invalidate the oldest', async (t) => {
  const xapi = await startSimulator(t)
  const first = await xapi.login('busy')
  const other = await xapi.login('quiet')
  for (let i = 0; i < 500; i++) await xapi.login('busy')
  t.same(await xapi.json('VM.get_all', [first]), { error: ['SESSION_INVALID', first] })
  t.ok('result' in (await xapi.json('VM.get_all', [other])), 'another originator keeps its session')
})

t.test('implicit messages: records, lookups, getters, setters through the lab, maps and sets', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const { driver } = xapi.simulator.services
  const records = await xapi.call<Records>('VM.get_all_records', [session])
  const labVms = ['VM', 'VM-controller', 'VM-snapshot', 'VM-template'].reduce((sum, type) => sum + driver.countOfType(type), 0)
  t.equal(Object.keys(records).length, labVms, 'every VM, control domain, snapshot and template')
  const [ref, vm] = Object.entries(records).find(([, r]) => r['is_a_template'] === false && r['is_control_domain'] === false) ?? []
  if (ref === undefined || vm === undefined) throw new Error('a VM')
  t.equal(typeof vm['memory_static_max'], 'number', 'ints are JSON numbers')
  t.match(vm['snapshot_time'], /^\d{8}T\d{2}:\d{2}:\d{2}Z$/, 'datetimes in the compact form')
  t.same(await xapi.call('VM.get_record', [session, ref]), vm)
  t.equal(await xapi.call('VM.get_by_uuid', [session, vm['uuid']]), ref)
  t.equal(await xapi.call('VM.get_name_label', [session, ref]), vm['name_label'])
  t.same(await xapi.call('VM.get_by_name_label', [session, vm['name_label']]), [ref])
  const xmlName = await xapi.xml('VM.get_memory_static_max', [session, ref])
  t.same(xmlName, { value: String(vm['memory_static_max']) }, 'XML-RPC sends ints as strings')

  await xapi.call('VM.set_name_label', [session, ref, 'renamed over XAPI'])
  t.equal(driver.getObject(String(vm['uuid']))?.['name_label'], 'renamed over XAPI', 'the lab has the new name')
  await xapi.call('VM.add_tags', [session, ref, 'from-xapi'])
  await xapi.call('VM.add_tags', [session, ref, 'from-xapi'])
  t.same(driver.getObject(String(vm['uuid']))?.['tags'], [...(vm['tags'] as string[]), 'from-xapi'], 'added once, in the lab')
  await xapi.call('VM.remove_tags', [session, ref, 'from-xapi'])
  t.same(await xapi.call('VM.get_tags', [session, ref]), vm['tags'])

  await xapi.call('VM.add_to_HVM_boot_params', [session, ref, 'firmware2', 'uefi'])
  t.same(await xapi.json('VM.add_to_HVM_boot_params', [session, ref, 'firmware2', 'bios']), { error: ['MAP_DUPLICATE_KEY', 'VM', 'HVM_boot_params', ref, 'firmware2'] })
  t.equal(((await xapi.call<Record<string, string>>('VM.get_HVM_boot_params', [session, ref])) ?? {})['firmware2'], 'uefi', 'the duplicate changed nothing')
  await xapi.call('VM.remove_from_HVM_boot_params', [session, ref, 'firmware2'])
  await xapi.call('VM.remove_from_HVM_boot_params', [session, ref, 'firmware2'])
  t.same(await xapi.call('VM.get_HVM_boot_params', [session, ref]), vm['HVM_boot_params'])

  const sr = Object.keys(await xapi.call<Records>('SR.get_all_records', [session]))[0]
  t.ok(sr?.startsWith('OpaqueRef:'))
  t.equal((await xapi.call<string[]>('host.get_all', [session])).length, driver.countOfType('host'))
})

t.test('bad calls answer XAPI failures and change nothing', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const [ref, vm] = Object.entries(await xapi.call<Records>('VM.get_all_records', [session]))[0] ?? []
  if (ref === undefined || vm === undefined) throw new Error('a VM')
  const before = xapi.simulator.services.db.generation
  const cases: Array<[string, unknown[], readonly string[]]> = [
    ['VM.no_such_message', [session], ['MESSAGE_METHOD_UNKNOWN', 'VM.no_such_message']],
    ['Nope.get_all', [session], ['MESSAGE_METHOD_UNKNOWN', 'Nope.get_all']],
    ['VM.get_all.extra', [session], ['MESSAGE_METHOD_UNKNOWN', 'VM.get_all.extra']],
    ['Async.VM.get_record', [session, ref], ['MESSAGE_METHOD_UNKNOWN', 'Async.VM.get_record']],
    ['VM.set_power_state', [session, ref, 'Running'], ['MESSAGE_METHOD_UNKNOWN', 'VM.set_power_state']],
    ['VM.get_record', [session], ['MESSAGE_PARAMETER_COUNT_MISMATCH', 'VM.get_record', '2', '1']],
    ['VM.get_record', [session, ref, ref], ['MESSAGE_PARAMETER_COUNT_MISMATCH', 'VM.get_record', '2', '3']],
    ['session.login_with_password', ['root'], ['MESSAGE_PARAMETER_COUNT_MISMATCH', 'session.login_with_password', '4', '1']],
    ['VM.get_record', [session, 'OpaqueRef:nope'], ['HANDLE_INVALID', 'VM', 'OpaqueRef:nope']],
    ['SR.get_record', [session, ref], ['HANDLE_INVALID', 'SR', ref]],
    ['VM.get_by_uuid', [session, '00000000-0000-0000-0000-000000000000'], ['UUID_INVALID', 'VM', '00000000-0000-0000-0000-000000000000']],
    ['VM.set_name_label', [session, ref, 42], ['FIELD_TYPE_ERROR', 'value']],
    ['VM.set_user_version', [session, ref, 'many'], ['FIELD_TYPE_ERROR', 'value']],
    ['VM.set_actions_after_shutdown', [session, ref, 'explode'], ['FIELD_TYPE_ERROR', 'value']],
    ['VM.set_name_label', [session, 'OpaqueRef:nope', 'x'], ['HANDLE_INVALID', 'VM', 'OpaqueRef:nope']],
  ]
  for (const [method, params, failure] of cases) {
    t.same(await xapi.json(method, params), { error: failure }, `${method} (JSON-RPC v2)`)
    t.same(await xapi.json(method, params, '1.0'), { error: failure }, `${method} (JSON-RPC v1)`)
  }
  t.same(await xapi.xml('VM.get_record', [session, 'OpaqueRef:nope']), { error: ['HANDLE_INVALID', 'VM', 'OpaqueRef:nope'] }, 'XML-RPC')
  t.equal(xapi.simulator.services.db.generation, before, 'no object changed')
  t.equal(await xapi.call('VM.get_name_label', [session, ref]), vm['name_label'])
})

t.test('requests that do not parse answer HTTP 500 with HTML, as XAPI does; oversized bodies 413', async (t) => {
  const xapi = await startSimulator(t, { maxBodySize: 64 * 1024 })
  const post = (path: string, body: string) => fetch(`${xapi.url}${path}`, { method: 'POST', body })
  for (const [path, body] of [
    ['/', '<methodCall><methodName>session.logout</methodName>'],
    ['/', '{"method":"VM.get_all"}'],
    ['/jsonrpc', '{"jsonrpc":"2.0","method":"session.login_with_password","id":0}'],
    ['/jsonrpc', 'not json'],
    ['/jsonrpc', '{"method":"x","params":[],"id":null}'],
  ] as const) {
    const response = await post(path, body)
    t.equal(response.status, 500, `${path} ${body}`)
    t.equal(response.headers.get('content-type'), 'text/html')
    t.match(await response.text(), /^<html><body><h1>HTTP 500 internal server error<\/h1>/)
  }
  const big = await post('/jsonrpc', JSON.stringify({ method: 'VM.get_all', params: ['x'.repeat(70 * 1024)], id: 1 })).catch((error: unknown) => error)
  t.equal(big instanceof Response ? big.status : 'reset', 413)
  const get = await fetch(`${xapi.url}/jsonrpc`)
  t.equal(get.status, 404)
  t.equal([...xapi.simulator.services.db.ofClass('session')].length, 0, 'nothing logged in')
  const session = await xapi.login()
  t.ok(session.startsWith('OpaqueRef:'), 'the simulator still answers')
})

t.test('system.listMethods lists what is served, and only that', async (t) => {
  const xapi = await startSimulator(t)
  const methods = await xapi.call<string[]>('system.listMethods', [])
  for (const method of ['session.login_with_password', 'VM.get_all_records', 'VM.add_tags', 'VM.set_name_label', 'event.from', 'event.inject', 'task.cancel', 'host.get_record']) {
    t.ok(methods.includes(method), method)
  }
  t.notOk(methods.includes('VM.set_power_state'), 'no setter for a read-only field')
  t.equal(new Set(methods).size, methods.length, 'no duplicates')
})

t.test('with TLS: HTTPS with a self-signed certificate kept in the data directory, which clients can verify against', async (t) => {
  const xapi = await startSimulator(t, { tls: { names: ['127.0.0.1'] } })
  t.match(xapi.url, /^https:\/\/127\.0\.0\.1:\d+$/)
  const pem = readFileSync(certificateFile(xapi.dataDir), 'utf8')
  t.equal(statSync(certificateFile(xapi.dataDir)).mode & 0o777, 0o600, 'the key is private')
  const ca = pem.slice(pem.indexOf('-----BEGIN CERTIFICATE-----'))
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'session.login_with_password', params: ['root', PASSWORD], id: 1 })
  const answer = await new Promise<string>((resolve, reject) => {
    const request = httpsRequest(`${xapi.url}/jsonrpc`, { method: 'POST', ca }, (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => (text += chunk.toString()))
      response.on('end', () => resolve(text))
    })
    request.on('error', reject)
    request.end(body)
  })
  t.match(JSON.parse(answer), { result: /^OpaqueRef:/ })
  const untrusted = await fetch(`${xapi.url}/jsonrpc`, { method: 'POST', body }).catch((error: unknown) => error)
  t.type(untrusted, TypeError, 'a client that does not trust it is refused')
})

t.test('on 127.0.0.x each host answers on its own address, the members with HOST_IS_SLAVE naming the master', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const hosts = await xapi.call<Record<string, Record<string, unknown>>>('host.get_all_records', [session])
  const pool = Object.values(await xapi.call<Record<string, Record<string, unknown>>>('pool.get_all_records', [session]))[0]
  const master = String(pool?.['master'])
  t.equal(hosts[master]?.['address'], '127.0.0.1', 'the master is where the simulator was asked to listen')
  const members = Object.entries(hosts).filter(([ref]) => ref !== master).map(([, host]) => String(host['address']))
  t.same(members.sort(), ['127.0.0.2', '127.0.0.3'])
  const port = new URL(xapi.url).port
  for (const address of members) {
    const response = await fetch(`http://${address}:${port}/jsonrpc`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'session.login_with_password', params: ['root', PASSWORD], id: 1 }) })
    t.same(await response.json(), { jsonrpc: '2.0', error: { code: 1, message: 'HOST_IS_SLAVE', data: ['127.0.0.1'] }, id: 1 }, address)
  }
  t.equal([...xapi.simulator.services.db.ofClass('session')].length, 1, 'the members opened no session')
})
