import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import t from 'tap'
import { XapiDriver } from '../../src/driver/xapi/driver.js'
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
