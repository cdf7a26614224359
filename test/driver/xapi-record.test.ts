import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { Driver, ObjectChange, XoRecord } from '../../src/driver/types.js'
import { XapiDriver } from '../../src/driver/xapi/driver.js'
import { parseRecordedLine, type RecordedLine } from '../../src/driver/xapi/recording.js'
import type { PoolConnectionSettings, XapiPool } from '../../src/driver/xapi/types.js'
import { recordSchemas } from '../../src/model/records.js'
import { openReplay, type Replay } from '../../src/simulator/replay.js'
import type { TestScope } from '../helpers/lab.js'
import { startServer, type TestServer } from '../helpers/server.js'
import { PASSWORD, startSimulator, type RunningSimulator } from '../helpers/xapi-simulator.js'

const TYPES = Object.keys(recordSchemas)
const LISTINGS = ['/rest/v0/pools?fields=*', '/rest/v0/hosts?fields=*', '/rest/v0/vms?fields=*', '/rest/v0/srs?fields=*', '/rest/v0/vdis?fields=*', '/rest/v0/networks?fields=*']

const settings = (host: string, password: string): PoolConnectionSettings => ({ host, username: 'root', password, allowUnauthorized: false, readOnly: false })
const xapiOptions = (host: string, password: string) => ({ allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools: [settings(host, password)] })

function scratch(t: TestScope): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-xrec-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

function firstPool(driver: XapiDriver): XapiPool {
  const [pool] = driver.pools
  if (pool === undefined) throw new Error('no pool connected')
  return pool
}

const everyRecord = (driver: Driver): XoRecord[] => TYPES.flatMap((type) => [...driver.objectsOfType(type)])

async function replayOf(t: TestScope, file: string): Promise<{ replay: Replay; url: string }> {
  const replay = await openReplay({ file })
  t.teardown(() => replay.close())
  return { replay, url: await replay.listen(0, '127.0.0.1') }
}

/** The one recording in `dir`, its raw text and its lines. */
function recording(t: Test, dir: string): { file: string; text: string; lines: RecordedLine[] } {
  const files = readdirSync(dir)
  t.equal(files.length, 1, 'one file for the one connection')
  const file = join(dir, files[0] ?? '')
  const text = readFileSync(file, 'utf8')
  t.ok(text.endsWith('\n'), 'the last line is whole')
  const lines = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const parsed = parseRecordedLine(line)
      if (parsed === undefined) throw new Error(`not a recorded line: ${line.slice(0, 200)}`)
      return parsed
    })
  return { file, text, lines }
}

/** Runs the recorded session: a Keel server on the simulator, recording; a rename and a VM start through its connection. */
async function recordSession(t: Test, simulator: RunningSimulator, dir: string): Promise<{ server: TestServer; driver: XapiDriver; sessions: string[]; changes: ObjectChange[] }> {
  const server = await startServer({ config: { driver: { kind: 'xapi', record: dir } }, app: { xapi: xapiOptions(simulator.url, PASSWORD) } })
  t.teardown(() => server.close())
  const driver = server.app.xapi
  if (driver === undefined) throw new Error('the server runs no XAPI driver')
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  const pool = firstPool(driver)
  const vm = everyRecord(driver).find((record) => record.type === 'VM' && record['power_state'] === 'Halted')
  const ref = vm?.['_xapiRef']
  await pool.call('VM.set_name_label', [ref, 'renamed while recording'])
  await pool.callAsync('VM.start', [ref, false, false])
  await driver.settled()
  const after = vm === undefined ? undefined : driver.getObject(vm.id)
  t.match(after, { name_label: 'renamed while recording', power_state: 'Running' }, 'the recorded driver saw the rename and the start')
  const sessions = [...simulator.simulator.services.db.ofClass('session')].map((session) => session.ref)
  return { server, driver, sessions, changes }
}

t.test('issue 28: a recorded session replays: a fresh driver holds the same records, a Keel server on the replay lists the same', async (t) => {
  const simulator = await startSimulator(t)
  const dir = join(scratch(t), 'recordings')
  const { server, driver, sessions, changes } = await recordSession(t, simulator, dir)
  const held = everyRecord(driver)
  const listed = await Promise.all(LISTINGS.map(async (path) => (await server.json(path)).body))
  await server.close()

  t.equal(statSync(dir).mode & 0o777, 0o700, 'the folder is 0700')
  const { file, text, lines } = recording(t, dir)
  t.equal(statSync(file).mode & 0o777, 0o600, 'the file is 0600')
  t.notOk(text.includes(PASSWORD), 'no password in the file')
  t.ok(sessions.length > 0, 'the session Keel used was seen on the pool')
  for (const session of sessions) t.notOk(text.includes(session), `no session ref ${session.slice(0, 16)}…`)
  t.match(lines[0], { kind: 'call', method: 'session.login_with_password', params: ['root', '<password>', '1.0', 'keel'], result: '<session>' }, 'the login, scrubbed')
  t.ok(
    lines.some((line) => line.method === 'VM.set_name_label' && line.params[0] === '<session>' && line.params[2] === 'renamed while recording'),
    'the rename, its session scrubbed',
  )
  t.ok(lines.some((line) => line.kind === 'event-batch' && line.method === 'event.from'), 'event batches')
  t.ok(lines.some((line) => line.method === 'Async.VM.start'), 'the start')
  t.match(lines.at(-1), { method: 'session.logout', params: ['<session>'] }, 'the logout, written at the clean stop')

  // A fresh driver on the replay, logged in with another password.
  const first = await replayOf(t, file)
  const fresh = new XapiDriver({ allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 } })
  t.teardown(() => fresh.close())
  await fresh.connect(settings(first.url, 'not the recorded password'), new AbortController().signal)
  // The batches follow the full fetch: what the replayed driver publishes from here is what the events brought.
  const followed: ObjectChange[] = []
  fresh.subscribe((change) => followed.push(change))
  await first.replay.exhausted()
  const summary = (list: readonly ObjectChange[]): unknown[] => list.map(({ kind, object }) => [kind, object.type, object.id, object['name_label'], object['power_state']])
  t.ok(changes.length > 0, 'the recorded driver followed changes')
  // Each object's changes in the same order; how changes of different objects interleave follows how the
  // pool's event batches fell, which a loaded machine moves between the recording and its replay.
  const byObject = (list: readonly ObjectChange[]): Map<string, unknown[]> => {
    const grouped = new Map<string, unknown[]>()
    for (const change of list) grouped.set(change.object.id, [...(grouped.get(change.object.id) ?? []), ...summary([change])])
    return grouped
  }
  t.same(byObject(followed), byObject(changes), 'the same changes, each object\'s in the same order')
  const replayed = new Map(everyRecord(fresh).map((record) => [record.id, record]))
  t.equal(replayed.size, held.length, 'as many records')
  for (const record of held) t.same(replayed.get(record.id), record, `${record.type} ${record.id}`)

  // A Keel server on a second replay of the same file.
  const second = await replayOf(t, file)
  const replaying = await startServer({ config: { driver: { kind: 'xapi' } }, app: { xapi: xapiOptions(second.url, 'any password') } })
  t.teardown(() => replaying.close())
  await second.replay.exhausted()
  for (const [i, path] of LISTINGS.entries()) t.same((await replaying.json(path)).body, listed[i], path)
})
