import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import t from 'tap'
import type { ObjectChange } from '../../src/driver/types.js'
import { parseRecordedLine } from '../../src/driver/xapi/recording.js'
import type { TestScope } from '../helpers/lab.js'
import { injectFault, simulatedPool } from '../helpers/xapi-driver.js'
import { named } from './fixtures/lab.js'

interface LogLine {
  readonly msg: string
  readonly [field: string]: unknown
}

/** A warn-level logger, and a wait for the first line of a message. */
function watchedLog(): { log: Logger; logged(msg: string): Promise<LogLine> } {
  const lines: LogLine[] = []
  const waiting = new Set<() => void>()
  const log = pino(
    { level: 'warn' },
    new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        lines.push(JSON.parse(chunk.toString()) as LogLine)
        for (const wake of waiting) wake()
        done()
      },
    }),
  )
  const logged = (msg: string): Promise<LogLine> =>
    new Promise((resolve) => {
      const look = (): void => {
        const line = lines.find((candidate) => candidate.msg === msg)
        if (line === undefined) return
        waiting.delete(look)
        resolve(line)
      }
      waiting.add(look)
      look()
    })
  return { log, logged }
}

function folder(t: TestScope): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-xfailover-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** How many times each `<class>.get_all_records` was called, from the connection's recording. */
function fullReads(dir: string): Record<string, number> {
  const [name] = readdirSync(dir)
  if (name === undefined) throw new Error(`no recording in ${dir}`)
  const counts: Record<string, number> = {}
  for (const text of readFileSync(join(dir, name), 'utf8').split('\n')) {
    const method = text === '' ? undefined : parseRecordedLine(text)?.method
    if (method?.endsWith('.get_all_records') === true) counts[method] = (counts[method] ?? 0) + 1
  }
  return counts
}

t.test('a failover back to the same master (issue 28): the session and the event token kept, no get_all_records, the outage’s changes reach watchers as updates', async (t) => {
  const dir = folder(t)
  const { log, logged } = watchedLog()
  // Probes given longer than the outage takes on a busy machine: the master must be found again, not the pool lost.
  const { simulator, driver } = await simulatedPool(t, { driver: { record: { dir }, log, probeTimeout: 60_000 } })
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  const vm = named(driver, 'VM', 'web-01')
  const session = await simulator.login()

  await injectFault(simulator.url, { pause_master: true })
  await logged('XAPI: the master does not answer, probing the pool')
  // Made during the outage behind the master's back: only its event can tell Keel.
  const renamed = await simulator.simulator.dispatcher.call('VM.set_name_label', [session, vm['_xapiRef'], 'renamed during the outage'])
  t.same(renamed, { value: '' })
  await injectFault(simulator.url, { pause_master: false })
  t.match(await logged('XAPI: failed over to the master found'), { master: new URL(simulator.url).host, sessionKept: true })
  await driver.settled()

  t.equal(driver.getObject(vm.id)?.['name_label'], 'renamed during the outage')
  const ofVm = changes.filter((change) => change.object.id === vm.id)
  t.match(ofVm, [{ kind: 'update', object: { name_label: 'renamed during the outage' }, previous: vm }], 'one update of the VM')
  t.same(
    changes.filter((change) => change.kind !== 'update'),
    [],
    'nothing removed or added',
  )
  await driver.close()
  const reads = fullReads(dir)
  t.equal(reads['VM.get_all_records'], 1, 'the VMs fetched once, at the connection')
  // pool and host are read once more at login, to learn the pool and its members.
  const again = Object.entries(reads).filter(([method, count]) => count !== (method === 'pool.get_all_records' || method === 'host.get_all_records' ? 2 : 1))
  t.same(again, [], 'no class fetched again')
})

t.test('a member promoted while the master is stopped: a new session, every object fetched again (issue 28)', async (t) => {
  const dir = folder(t)
  const { log, logged } = watchedLog()
  const { simulator, driver } = await simulatedPool(t, { driver: { record: { dir }, log, probeTimeout: 60_000 } })
  await injectFault(simulator.url, { stop_master: true })
  await driver.settled()
  t.match(await logged('XAPI: failed over to the master found'), { sessionKept: false })
  t.not((await logged('XAPI: failed over to the master found'))['master'], new URL(simulator.url).host, 'another master')
  await driver.close()
  t.equal(fullReads(dir)['VM.get_all_records'], 2, 'the VMs fetched again on the new master')
})
