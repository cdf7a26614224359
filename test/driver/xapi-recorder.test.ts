import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { Agent } from 'node:http'
import { XapiDriver } from '../../src/driver/xapi/driver.js'
import { XapiRecorder, type Rpc } from '../../src/driver/xapi/recorder.js'
import type { RpcTarget } from '../../src/driver/xapi/transport.js'
import { parseRecordedLine, type RecordedLine } from '../../src/driver/xapi/recording.js'
import { XapiError } from '../../src/driver/xapi/types.js'
import type { TestScope } from '../helpers/lab.js'
import { connectDriver, failure } from '../helpers/xapi-driver.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

function folder(t: TestScope): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-xrec-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return join(dir, 'recordings')
}

/** The text and lines of the one file in `dir`. */
function onlyRecording(dir: string): { file: string; text: string; lines: RecordedLine[] } {
  const [name, ...others] = readdirSync(dir)
  if (name === undefined || others.length > 0) throw new Error(`expected one recording in ${dir}, found ${readdirSync(dir).join(', ')}`)
  const file = join(dir, name)
  const text = readFileSync(file, 'utf8')
  const lines = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => parseRecordedLine(line) ?? { t: '', kind: 'error' as const, method: `unparsable: ${line.slice(0, 80)}`, params: [], error: [], ms: 0 })
  return { file, text, lines }
}

t.test('a refused login is recorded without the password tried, and the file is closed with the connection', async (t) => {
  const simulator = await startSimulator(t)
  const dir = folder(t)
  const driver = new XapiDriver({ allowHttp: true, graceDelay: 0, record: { dir } })
  t.teardown(() => driver.close())
  const tried = 'a wrong password tried'
  const error = await failure(driver.connect({ host: simulator.url, username: 'root', password: tried, allowUnauthorized: false, readOnly: false }, new AbortController().signal))
  t.ok(error instanceof XapiError && error.code === 'SESSION_AUTHENTICATION_FAILED', String(error))
  const { text, lines } = onlyRecording(dir)
  t.notOk(text.includes(tried), 'the password tried is not in the file')
  t.match(lines, [{ kind: 'error', method: 'session.login_with_password', params: ['root', '<password>', '1.0', 'keel'], error: ['SESSION_AUTHENTICATION_FAILED', 'root'] }])
  t.equal(lines.length, 1)
})

t.test('an HTTP handler request is recorded with its query and status, not the session', async (t) => {
  const simulator = await startSimulator(t)
  const dir = folder(t)
  const { driver } = await connectDriver(t, simulator.url, { record: { dir } })
  const [pool] = driver.pools
  const vdi = [...driver.objectsOfType('VDI')][0]
  if (pool === undefined || vdi === undefined) throw new Error('no pool or no VDI')
  const response = await pool.request({ method: 'GET', path: '/export_raw_vdi', query: { vdi: String(vdi['_xapiRef']), format: 'raw' } })
  for await (const chunk of response) void chunk
  await driver.close()
  const { text, lines } = onlyRecording(dir)
  t.match(
    lines.find((line) => line.method === 'GET /export_raw_vdi'),
    { kind: 'call', params: [{ vdi: vdi['_xapiRef'], format: 'raw' }], result: { status: 200 } },
  )
  t.notOk(text.includes('session_id'), 'no session query parameter')
  t.notOk(text.includes(PASSWORD), 'no password')
})

t.test('at its size cap the recording stops with a warning, whole lines only, and the pool is served all the same', async (t) => {
  const simulator = await startSimulator(t)
  const dir = folder(t)
  const warnings: string[] = []
  const log = pino({ level: 'warn' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (warnings.push(chunk.toString()), done()) }))
  const cap = 8192
  const { driver } = await connectDriver(t, simulator.url, { record: { dir, maxBytes: cap }, log })
  t.equal(driver.countOfType('VM'), 12, 'every VM indexed')
  await driver.close()
  const { file, text, lines } = onlyRecording(dir)
  t.ok(statSync(file).size <= cap, `${statSync(file).size} bytes, within the cap`)
  t.ok(text.endsWith('\n'), 'the last line is whole')
  t.ok(lines.length > 0 && lines.every((line) => !line.method.startsWith('unparsable')), 'every line parses')
  t.notOk(lines.some((line) => line.method === 'session.logout'), 'nothing written past the cap')
  t.equal(warnings.length, 1, 'one warning')
  t.match(JSON.parse(warnings[0] ?? '{}'), { level: 40, file, msg: /size cap \(8192 bytes\); recording stopped/ })
})

const target: RpcTarget = { origin: new URL('http://127.0.0.1:1'), agent: new Agent() }
const options = { timeout: 1000 }

t.test('recorder: a caller waits while its line is not written out; the lines buffered are all written at close', async (t) => {
  const dir = folder(t)
  const recorder = await XapiRecorder.open({ dir, host: '127.0.0.1:1', maxBytes: 64 * 1024 * 1024 })
  t.teardown(() => recorder.close())
  const big = 'x'.repeat(1024 * 1024)
  const rpc = recorder.wrap(async (_target, method) => (method === 'VM.get_big' ? big : 'small'))
  await rpc(target, 'VM.get_big', ['OpaqueRef:session-1'], options)
  t.ok(statSync(recorder.path).size > big.length, 'the 1 MiB line is in the file when the call returns')
  for (let i = 0; i < 200; i++) await rpc(target, 'VM.get_small', ['OpaqueRef:session-1', i], options)
  await recorder.close()
  const { lines } = onlyRecording(dir)
  t.equal(lines.length, 201, 'every line, the buffered ones written at close')
  t.match(lines.at(-1), { kind: 'call', method: 'VM.get_small', params: ['<session>', 199], result: 'small' })
  await rpc(target, 'VM.get_small', ['OpaqueRef:session-1', 'late'], options)
  t.equal(onlyRecording(dir).lines.length, 201, 'a call answered after close is not recorded')
})

t.test('recorder: sessions replaced inside other text too; a short password only where it is a whole value', async (t) => {
  const dir = folder(t)
  const recorder = await XapiRecorder.open({ dir, host: 'pool.example.net:443', maxBytes: 1024 * 1024 })
  const session = 'OpaqueRef:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'
  const answers: Record<string, () => unknown> = {
    'session.login_with_password': () => session,
    'VM.get_record': () => ({ name_label: 'abc', name_description: 'abcdef', other_config: { [session]: `opened by ${session}` } }),
    'VM.start': () => {
      throw new XapiError('SESSION_INVALID', [session])
    },
  }
  const inner: Rpc = async (_target, method) => answers[method]?.()
  const rpc = recorder.wrap(inner)
  await rpc(target, 'session.login_with_password', ['root', 'abc', '1.0', 'keel'], options)
  await rpc(target, 'VM.get_record', [session, 'OpaqueRef:vm'], options)
  await failure(rpc(target, 'VM.start', [session, 'OpaqueRef:vm', false, false], options))
  await recorder.close()
  t.match(readdirSync(dir), [/^pool\.example\.net_443-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z\.ndjson$/], 'named after the host and the time')
  const { text, lines } = onlyRecording(dir)
  t.notOk(text.includes(session), 'no session ref anywhere')
  t.same(
    lines.map((line) => ('result' in line ? line.result : line.error)),
    ['<session>', { name_label: '<password>', name_description: 'abcdef', other_config: { '<session>': 'opened by <session>' } }, ['SESSION_INVALID', '<session>']],
  )
})

t.test('recorder: pool.join and pool.join_force carry another pool\u2019s password: it is recorded as <password>, in its answers too', async (t) => {
  const dir = folder(t)
  const recorder = await XapiRecorder.open({ dir, host: 'pool.example.net:443', maxBytes: 1024 * 1024 })
  const session = 'OpaqueRef:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0'
  const theirs = 'the target pool password'
  const inner: Rpc = async (_target, method) => {
    if (method === 'pool.join_force') throw new XapiError('SESSION_AUTHENTICATION_FAILED', ['root', `refused ${theirs}`])
    return ''
  }
  const rpc = recorder.wrap(inner)
  await rpc(target, 'pool.join', [session, 'master.example.net', 'root', theirs], options)
  await failure(rpc(target, 'pool.join_force', [session, 'master.example.net', 'root', theirs], options))
  await rpc(target, 'Async.pool.join', [session, 'master.example.net', 'root', 'xyz'], options)
  await recorder.close()
  const { text, lines } = onlyRecording(dir)
  t.notOk(text.includes(theirs), 'the password is nowhere in the file')
  t.match(lines, [
    { kind: 'call', method: 'pool.join', params: ['<session>', 'master.example.net', 'root', '<password>'] },
    { kind: 'error', method: 'pool.join_force', params: ['<session>', 'master.example.net', 'root', '<password>'], error: ['SESSION_AUTHENTICATION_FAILED', 'root', 'refused <password>'] },
    { kind: 'call', method: 'Async.pool.join', params: ['<session>', 'master.example.net', 'root', '<password>'] },
  ])
})
