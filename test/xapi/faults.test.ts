import t from 'tap'
import { get } from 'node:http'
import { PASSWORD, startSimulator, taskOutcome, type RunningSimulator } from '../helpers/xapi-simulator.js'

const root = 'Basic ' + Buffer.from(`root:${PASSWORD}`).toString('base64')

const inject = async (xapi: RunningSimulator, body: unknown, authorization = root, url = xapi.url): Promise<{ status: number; body: unknown }> => {
  const response = await fetch(`${url}/simulator/faults`, { method: 'POST', headers: { authorization }, body: typeof body === 'string' ? body : JSON.stringify(body) })
  return { status: response.status, body: await response.json() }
}

/**
 * How a GET ends, with node:http: fetch takes a reset after the headers of a
 * response without keep-alive for the end of its body, whichever bytes came.
 */
function download(url: string): Promise<{ received: number; ending: string }> {
  return new Promise((resolve) => {
    let received = 0
    const request = get(url, (response) => {
      response.on('data', (chunk: Buffer) => (received += chunk.length))
      response.on('end', () => resolve({ received, ending: 'end' }))
      response.on('error', (error: NodeJS.ErrnoException) => resolve({ received, ending: error.code ?? error.message }))
    })
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ received, ending: error.code ?? error.message }))
  })
}

t.test('injected faults: sessions invalidated, events lost, a delay, an export cut mid-stream', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const { token } = await xapi.call<{ token: string }>('event.from', [session, ['vm'], '', 0])
  const vm = (await xapi.call<string[]>('VM.get_all', [session]))[0]
  await xapi.call('VM.add_to_other_config', [session, vm, 'k', 'v'])

  t.same(await inject(xapi, { lose_events: true }), { status: 200, body: { delay_ms: 0, reset_next_export_after: null, reset_next_reused: null } })
  t.same(await xapi.json('event.from', [session, ['vm'], token, 0]), { error: ['EVENTS_LOST'] })
  const fresh = await xapi.call<{ token: string }>('event.from', [session, ['vm'], '', 0])
  t.same((await xapi.call<{ events: unknown[] }>('event.from', [session, ['vm'], fresh.token, 0])).events, [], 'a token from after the loss works')

  t.equal((await inject(xapi, { invalidate_sessions: true })).status, 200)
  t.same(await xapi.json('VM.get_all', [session]), { error: ['SESSION_INVALID', session] })
  const again = await xapi.login()

  t.same(await inject(xapi, { delay_ms: 20 }), { status: 200, body: { delay_ms: 20, reset_next_export_after: null, reset_next_reused: null } })
  t.ok((await xapi.call<string[]>('VM.get_all', [again])).length > 0, 'delayed calls still answer')
  await inject(xapi, { delay_ms: 0 })

  const srs = await xapi.call<Record<string, Record<string, unknown>>>('SR.get_all_records', [again])
  const sr = Object.entries(srs).find(([, r]) => r['shared'] === true && r['content_type'] === 'user')?.[0]
  const vdi = await xapi.call<string>('VDI.create', [again, { name_label: 'cut', SR: sr, virtual_size: 8 * 1024 * 1024 }])
  await inject(xapi, { reset_next_export_after: 1024 * 1024 })
  const task = await xapi.call<string>('task.create', [again, 'cut export', ''])
  // The bytes the socket took before the reset that the client had yet to read are lost with the connection.
  const cut = await download(`${xapi.url}/export_raw_vdi?session_id=${again}&task_id=${task}&vdi=${vdi}`)
  t.equal(cut.ending, 'ECONNRESET', 'the download breaks')
  t.ok(cut.received <= 1024 * 1024, `no byte past the fault's (${cut.received})`)
  let { token: taskToken } = await xapi.call<{ token: string }>('event.from', [again, ['task'], '', 0])
  while ((await xapi.call('task.get_status', [again, task])) === 'pending') ({ token: taskToken } = await xapi.call<{ token: string }>('event.from', [again, ['task'], taskToken, 30]))
  t.match(await xapi.call('task.get_record', [again, task]), { status: 'failure', error_info: ['VDI_IO_ERROR'] })
  const whole = await fetch(`${xapi.url}/export_raw_vdi?session_id=${again}&vdi=${vdi}`).then((r) => r.arrayBuffer())
  t.equal(whole.byteLength, 8 * 1024 * 1024, 'the fault was for one export only')
})

t.test('the fault endpoint refuses strangers and bad settings, changing nothing', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  t.equal((await inject(xapi, { invalidate_sessions: true }, 'Basic ' + Buffer.from('root:wrong').toString('base64'))).status, 401)
  t.equal((await inject(xapi, { invalidate_sessions: true }, '')).status, 401)
  for (const body of ['nope', '[]', { invalidate_sessions: 'yes' }, { delay_ms: -1 }, { reset_next_export_after: 1.5 }, { reset_next_reused: 'rrd_updates' }, { reset_next_reused: true }, { invalidate_sessions: true, shout: 1 }]) {
    t.equal((await inject(xapi, body)).status, 400, JSON.stringify(body))
  }
  t.equal((await fetch(`${xapi.url}/simulator/faults`, { headers: { authorization: root } })).status, 405)
  t.ok('result' in (await xapi.json('VM.get_all', [session])), 'the session survived every refused request')
})

t.test('a stopped master resets every connection; the next host serves as master and the members name it in HOST_IS_SLAVE', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const port = new URL(xapi.url).port
  const at = (address: string): string => `http://${address}:${port}`
  const call = async (address: string, method: string, params: unknown[]): Promise<unknown> => {
    const response = await fetch(`${at(address)}/jsonrpc`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }) })
    return response.json()
  }
  const masterAddress = async (address: string): Promise<unknown> => {
    const { result: pools } = (await call(address, 'pool.get_all_records', [session])) as { result: Record<string, { master: string }> }
    const master = Object.values(pools)[0]?.master
    return ((await call(address, 'host.get_address', [session, master])) as { result: string }).result
  }
  t.equal(await masterAddress('127.0.0.1'), '127.0.0.1')

  t.equal((await inject(xapi, { stop_master: true })).status, 200)
  await t.rejects(fetch(`${xapi.url}/jsonrpc`, { method: 'POST', body: '{}' }), TypeError, 'the old master answers nothing')
  await t.rejects(fetch(`${xapi.url}/simulator/faults`, { method: 'POST', headers: { authorization: root }, body: '{}' }), TypeError, 'not even the fault endpoint')
  t.equal(await masterAddress('127.0.0.2'), '127.0.0.2', 'the next host is the master, and the pool says so')
  t.same(await call('127.0.0.3', 'session.login_with_password', ['root', PASSWORD]), { jsonrpc: '2.0', error: { code: 1, message: 'HOST_IS_SLAVE', data: ['127.0.0.2'] }, id: 1 })
  t.match(await call('127.0.0.2', 'session.login_with_password', ['root', PASSWORD]), { result: /^OpaqueRef:/ }, 'the new master takes logins')
  t.match(await call('127.0.0.2', 'VM.get_all', [session]), { result: [/^OpaqueRef:/] }, 'and the sessions opened before')

  t.equal((await inject(xapi, { stop_master: true }, root, at('127.0.0.2'))).status, 200, 'the new master can stop too')
  t.equal(await masterAddress('127.0.0.3'), '127.0.0.3')
  const refused = await inject(xapi, { stop_master: true, delay_ms: 50 }, root, at('127.0.0.3'))
  t.match(refused, { status: 400, body: { error: /no other host/ } }, 'the last host cannot stop')
  t.same((await inject(xapi, {}, root, at('127.0.0.3'))).body, { delay_ms: 0, reset_next_export_after: null, reset_next_reused: null }, 'and the refused request changed nothing')
  t.equal(await masterAddress('127.0.0.3'), '127.0.0.3', 'the last host still serves')
  t.equal((await inject(xapi, { stop_master: false }, root, at('127.0.0.3'))).status, 400, 'a stopped master stays stopped')
})

t.test('stop_member: that member resets every connection, the master keeps its role; a bad address or the master refused', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const port = new URL(xapi.url).port
  const member = `http://127.0.0.2:${port}`
  const login = async (url: string): Promise<unknown> => (await fetch(`${url}/jsonrpc`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'session.login_with_password', params: ['root', PASSWORD], id: 1 }) })).json()
  t.match(await login(member), { error: { message: 'HOST_IS_SLAVE' } }, 'the member answers before')

  for (const [body, error] of [
    [{ stop_member: '127.0.0.1' }, /is the master's address/],
    [{ stop_member: '127.0.0.99', delay_ms: 50 }, /no host answers at 127\.0\.0\.99/],
    [{ stop_member: 2 }, /stop_member is a member's address/],
    [{ stop_member: '127.0.0.2', stop_master: true }, /one at a time/],
  ] as const) t.match(await inject(xapi, body), { status: 400, body: { error } }, JSON.stringify(body))
  t.same((await inject(xapi, {})).body, { delay_ms: 0, reset_next_export_after: null, reset_next_reused: null }, 'the refused requests changed nothing')
  t.match(await login(member), { error: { message: 'HOST_IS_SLAVE' } }, 'the member still answers')

  t.equal((await inject(xapi, { stop_member: '127.0.0.2' })).status, 200)
  await t.rejects(fetch(`${member}/jsonrpc`, { method: 'POST', body: '{}' }), TypeError, 'the member answers nothing')
  await t.rejects(fetch(`${member}/export_raw_vdi?session_id=${session}`), TypeError, 'not even its disk handlers')
  t.match(await login(`http://127.0.0.3:${port}`), { error: { message: 'HOST_IS_SLAVE', data: ['127.0.0.1'] } }, 'the other members still name the master')
  t.ok((await xapi.call<string[]>('VM.get_all', [session])).length > 0, 'the master serves as before')
})

t.test('pause_master: the master resets every connection and keeps its role; resumed, it serves the sessions and events of before', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const member = `http://127.0.0.2:${new URL(xapi.url).port}`
  const login = async (url: string): Promise<unknown> => (await fetch(`${url}/jsonrpc`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'session.login_with_password', params: ['root', PASSWORD], id: 1 }) })).json()
  const { token } = await xapi.call<{ token: string }>('event.from', [session, ['vm'], '', 0])
  const [vm] = await xapi.call<string[]>('VM.get_all', [session])
  for (const body of [{ pause_master: 'yes' }, { pause_master: true, stop_master: true }, { pause_master: true, stop_member: '127.0.0.2' }]) {
    t.match(await inject(xapi, body), { status: 400 }, JSON.stringify(body))
  }
  t.ok('result' in (await xapi.json('VM.get_all', [session])), 'the refused requests changed nothing')

  t.equal((await inject(xapi, { pause_master: true })).status, 200)
  await t.rejects(fetch(`${xapi.url}/jsonrpc`, { method: 'POST', body: '{}' }), TypeError, 'the master answers nothing')
  await t.rejects(fetch(`${xapi.url}/export_raw_vdi?session_id=${session}`), TypeError, 'not even its disk handlers')
  t.match(await login(member), { error: { message: 'HOST_IS_SLAVE', data: ['127.0.0.1'] } }, 'the members still name it')
  const renamed = await xapi.simulator.dispatcher.call('VM.set_name_label', [session, vm, 'renamed while paused'])
  t.same(renamed, { value: '' })

  t.equal((await inject(xapi, { pause_master: false })).status, 200, 'its fault endpoint answers through the pause')
  const { events } = await xapi.call<{ events: Array<{ ref: string; snapshot: { name_label: string } }> }>('event.from', [session, ['vm'], token, 0])
  t.match(
    events.filter((event) => event.ref === vm),
    [{ snapshot: { name_label: 'renamed while paused' } }],
    'the session of before works, and its token gives the change made meanwhile',
  )
})

t.test('stall_transfers: a disk handler takes the request and answers nothing, until its task is cancelled; stall_next_export_after: one export stops mid-body', async (t) => {
  const xapi = await startSimulator(t)
  const session = await xapi.login()
  const srs = await xapi.call<Record<string, Record<string, unknown>>>('SR.get_all_records', [session])
  const sr = Object.entries(srs).find(([, r]) => r['shared'] === true && r['content_type'] === 'user')?.[0]
  const size = 8 * 1024 * 1024
  const vdi = await xapi.call<string>('VDI.create', [session, { name_label: 'stalled', SR: sr, virtual_size: size }])
  for (const body of [{ stall_transfers: 1 }, { stall_next_export_after: -1 }]) t.match(await inject(xapi, body), { status: 400 }, JSON.stringify(body))

  t.equal((await inject(xapi, { stall_transfers: true })).status, 200)
  const task = await xapi.call<string>('task.create', [session, 'stalled export', ''])
  const stalled = fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&task_id=${task}&vdi=${vdi}`).catch((error: unknown) => error)
  // task.cancel is refused until the transfer reports to the task, that is until the host has taken the request.
  while ('error' in (await xapi.json('task.cancel', [session, task])));
  t.type(await stalled, TypeError, 'cancelled, the request ends with its connection, never answered')
  t.match(await taskOutcome(xapi, session, task), { status: 'cancelled', error_info: ['TASK_CANCELLED', task] })
  t.equal((await inject(xapi, { stall_transfers: false })).status, 200)

  const after = 1024 * 1024
  t.equal((await inject(xapi, { stall_next_export_after: after })).status, 200)
  const second = await xapi.call<string>('task.create', [session, 'export stopped mid-body', ''])
  const response = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&task_id=${second}&vdi=${vdi}`)
  t.equal(response.status, 200)
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  let received = 0
  while (received < after) received += (await reader.read()).value?.length ?? 0
  t.equal(received, after, 'the bytes up to the stall')
  await xapi.call('task.cancel', [session, second])
  // The body has no length: it ends with the connection, cleanly or reset.
  const rest = await reader.read().catch(() => ({ done: true, value: undefined }))
  t.same(rest, { done: true, value: undefined }, 'then nothing until the connection goes')
  t.match(await taskOutcome(xapi, session, second), { status: 'cancelled' })
  const whole = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}`).then((r) => r.arrayBuffer())
  t.equal(whole.byteLength, size, 'the fault was for one export only')
})
