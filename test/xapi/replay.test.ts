import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { RecordedError, RecordedLine } from '../../src/driver/xapi/recording.js'
import { openReplay, readRecording, RecordedAnswers, RecordingError } from '../../src/simulator/replay.js'
import { decodeJsonRpcResponse } from '../../src/xapi/json-rpc.js'
import { xapiOutcome } from '../../src/xapi/xml-rpc-status.js'
import { decodeMethodResponse, encodeMethodCall, XmlRpcDouble, type XmlRpcValue } from '../../src/xapi/xml-rpc.js'
import type { TestScope } from '../helpers/lab.js'

const T = '2026-11-26T23:00:00.000Z'
const answer = (method: string, params: unknown[], result: unknown): RecordedLine => ({ t: T, kind: method === 'event.from' ? 'event-batch' : 'call', method, params, result, ms: 1 })
const failed = (method: string, params: unknown[], error: RecordedError['error']): RecordedLine => ({ t: T, kind: 'error', method, params, error, ms: 1 })
const batch = (token: string, names: string[]): unknown => ({ events: names.map((name) => ({ class: 'vm', operation: 'mod', ref: 'OpaqueRef:vm', snapshot: { name_label: name } })), valid_ref_counts: {}, token })

function folder(t: TestScope): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-replay-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('answers: the next recorded one for the same method and parameters, then the last again; scrubbed values match anything', async (t) => {
  const answers = new RecordedAnswers([
    answer('VM.get_name_label', ['<session>', 'OpaqueRef:a'], 'first'),
    answer('VM.get_name_label', ['<session>', 'OpaqueRef:b'], 'other VM'),
    answer('VM.get_name_label', ['<session>', 'OpaqueRef:a'], 'second'),
    answer('task.create', ['<session>', 'export', 'Keel'], 'OpaqueRef:task'),
  ])
  t.same(answers.next('VM.get_name_label', ['OpaqueRef:any-session', 'OpaqueRef:a']), { value: 'first' })
  t.same(answers.next('VM.get_name_label', ['OpaqueRef:another-session', 'OpaqueRef:b']), { value: 'other VM' })
  t.same(answers.next('VM.get_name_label', ['OpaqueRef:any-session', 'OpaqueRef:a']), { value: 'second' })
  t.same(answers.next('VM.get_name_label', ['OpaqueRef:any-session', 'OpaqueRef:a']), { value: 'second' }, 'used up: the last again')
  t.same(answers.next('task.create', ['OpaqueRef:s', 'export', 'Keel']), { value: 'OpaqueRef:task' })
})

t.test('answers: recorded XAPI failures are replayed, failures below XAPI and HTTP handler lines are not; what was never recorded is said so', async (t) => {
  const answers = new RecordedAnswers([
    failed('VM.start', ['<session>', 'OpaqueRef:vm', false, false], { transport: 'socket hang up' }),
    failed('VM.start', ['<session>', 'OpaqueRef:vm', false, false], ['VM_BAD_POWER_STATE', 'OpaqueRef:vm', 'halted', 'running']),
    answer('GET /export_raw_vdi', [{ vdi: 'OpaqueRef:v', format: 'raw' }], { status: 200 }),
  ])
  t.same(answers.next('VM.start', ['s', 'OpaqueRef:vm', false, false]), { failure: ['VM_BAD_POWER_STATE', 'OpaqueRef:vm', 'halted', 'running'] })
  t.same(answers.next('VM.stop', ['s', 'OpaqueRef:vm']), { failure: ['MESSAGE_METHOD_UNKNOWN', 'VM.stop'] })
  t.match(answers.next('VM.start', ['s', 'OpaqueRef:other', false, false]), { failure: ['INTERNAL_ERROR', /no recorded answer to VM.start/] })
  t.same(answers.next('GET /export_raw_vdi', [{ vdi: 'OpaqueRef:v', format: 'raw' }]), { failure: ['MESSAGE_METHOD_UNKNOWN', 'GET /export_raw_vdi'] }, 'an HTTP handler line is no call')
})

t.test('answers: event.from gets the batches recorded for its classes in order, whatever its token, then past-end', async (t) => {
  const answers = new RecordedAnswers([
    answer('event.from', ['<session>', ['message'], '', 0], batch('5', ['message'])),
    answer('event.from', ['<session>', ['VM', 'task'], '5', 30], batch('6', ['a'])),
    answer('event.from', ['<session>', ['VM', 'task'], '6', 30], batch('7', ['b'])),
  ])
  t.same(answers.next('event.from', ['s', ['VM', 'task'], 'any token', 60.1]), { value: batch('6', ['a']) })
  t.same(answers.next('event.from', ['s', ['message'], '', 0]), { value: batch('5', ['message']) })
  t.same(answers.next('event.from', ['s', ['VM', 'task'], '6', 60.1]), { value: batch('7', ['b']) })
  t.equal(answers.next('event.from', ['s', ['VM', 'task'], '7', 60.1]), 'past-end')
})

t.test('the replay server: any password logs in, both wires answer, past the recording event.from waits as an idle pool', async (t) => {
  const file = join(folder(t), 'pool.ndjson')
  const lines = [
    answer('session.login_with_password', ['root', '<password>', '1.0', 'keel'], '<session>'),
    answer('host.get_all_records', ['<session>'], { 'OpaqueRef:h': { name_label: 'h1', memory_overhead: 1024, cpu_load: 0.25 } }),
    answer('event.from', ['<session>', ['host'], '1', 30], batch('2', ['x'])),
    answer('VM.set_shadow_multiplier_live', ['<session>', 'OpaqueRef:vm', 1.5], ''),
    answer('message.get_since', ['<session>', '20261126T23:00:00Z'], { 'OpaqueRef:m': { name: 'm' } }),
  ]
  writeFileSync(file, lines.map((line) => JSON.stringify(line)).join('\n') + '\n')
  const replay = await openReplay({ file })
  t.teardown(() => replay.close())
  const url = await replay.listen(0, '127.0.0.1')
  const json = async (method: string, params: unknown[]): Promise<unknown> => {
    const response = await fetch(`${url}/jsonrpc`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }) })
    return decodeJsonRpcResponse(await response.text())
  }
  const login = (await json('session.login_with_password', ['root', 'whatever was typed'])) as { result: string }
  t.match(login.result, /^OpaqueRef:[0-9a-f-]{36}$/, 'a session of the replay, not the scrubbed one')
  const xmlCall = async (method: string, params: XmlRpcValue[]): Promise<unknown> => {
    const response = await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: encodeMethodCall(method, params) })
    const decoded = decodeMethodResponse(await response.text())
    return 'value' in decoded ? xapiOutcome(decoded.value) : decoded
  }
  t.same(await xmlCall('host.get_all_records', [login.result]), { value: { 'OpaqueRef:h': { name_label: 'h1', memory_overhead: 1024, cpu_load: new XmlRpcDouble(0.25) } } }, 'XML-RPC: fractions as doubles')
  t.same(await xmlCall('VM.set_shadow_multiplier_live', [login.result, 'OpaqueRef:vm', new XmlRpcDouble(1.5)]), { value: '' }, 'an XML-RPC double matches the recorded number')
  t.same(await xmlCall('message.get_since', [login.result, new Date(Date.UTC(2026, 10, 26, 23))]), { value: { 'OpaqueRef:m': { name: 'm' } } }, 'an XML-RPC datetime matches the recorded text')
  t.same(await json('event.from', [login.result, ['host'], '1', 30]), { result: batch('2', ['x']) })
  let exhausted = false
  void replay.exhausted().then(() => (exhausted = true))
  t.same(await json('event.from', [login.result, ['host'], '2', 0]), { result: { events: [], valid_ref_counts: {}, token: '2' } }, 'an empty batch once the timeout asked has passed')
  t.ok(exhausted, 'exhausted() has resolved')
  const handler = await fetch(`${url}/export_raw_vdi?vdi=OpaqueRef:v&format=raw`)
  t.equal(handler.status, 404, 'HTTP handlers are not replayed')
  await handler.body?.cancel()
})

t.test('a file that is not a recording is refused, naming the line', async (t) => {
  const dir = folder(t)
  const good = JSON.stringify(answer('pool.get_all_records', ['<session>'], {}))
  for (const [name, text, at] of [
    ['not JSON', `${good}\n{"kind": "call",\n`, 2],
    ['unknown kind', `{"t":"${T}","kind":"note","method":"m","params":[],"ms":0}\n`, 1],
    ['an answer without its result', `${good}\n\n{"t":"${T}","kind":"call","method":"m","params":[],"ms":0}\n`, 3],
    ['an error of neither form', `{"t":"${T}","kind":"error","method":"m","params":[],"ms":0,"error":5}\n`, 1],
  ] as const) {
    const file = join(dir, `${name.replace(/\W/g, '-')}.ndjson`)
    writeFileSync(file, text)
    const error = await readRecording(file).catch((error: unknown) => error)
    t.ok(error instanceof RecordingError, name)
    t.equal((error as Error).message, `${file}:${at}: not a line of a XAPI recording`, name)
  }
})
