import t, { type Test } from 'tap'
import type { Driver, ObjectChange, XoRecord } from '../../src/driver/types.js'
import type { XapiDriverOptions } from '../../src/driver/xapi/driver.js'
import { recordSchemas } from '../../src/model/records.js'
import { connectDriver, injectFault, simulatedPool } from '../helpers/xapi-driver.js'
import { PASSWORD, type RunningSimulator } from '../helpers/xapi-simulator.js'
import { driverConformance } from './conformance.js'
import { demoCases, named } from './fixtures/lab.js'

driverConformance(t, {
  async open(t) {
    // Steps of 20 ms: longer than the index takes to show a change, so an abort on the first one lands half-way.
    const { simulator, driver } = await simulatedPool(t, { simulator: { stepDelay: 20 } })
    return {
      driver,
      reopen: async (): Promise<Driver> => (await connectDriver(t, simulator.url)).driver,
    }
  },
  cases: demoCases,
})

type Served = Map<string, XoRecord>

const TYPES = Object.keys(recordSchemas)
const served = (driver: Driver): Served => new Map(TYPES.flatMap((type) => [...driver.objectsOfType(type)].map((record) => [record.id, record] as const)))

/** The state `changes` lead to from `before`, and where a change does not follow from the state before it. */
function replay(before: Served, changes: readonly ObjectChange[]): { state: Served; problems: string[] } {
  const state = new Map(before)
  const problems: string[] = []
  for (const { kind, object, previous } of changes) {
    const known = state.get(object.id)
    if (kind === 'add' && known !== undefined) problems.push(`add of ${object.id}, already there`)
    if (kind !== 'add' && (known === undefined || (kind === 'update' ? previous !== known : object !== known))) problems.push(`${kind} of ${object.id} does not follow`)
    if (kind === 'remove') state.delete(object.id)
    else state.set(object.id, object)
  }
  return { state, problems }
}

/** A JSON-RPC call to the simulator's host at `url`, logged in anew (a fault may have ended every session). */
async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const call = async (name: string, args: unknown[]): Promise<unknown> => {
    const response = await fetch(`${url}/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method: name, params: args, id: 1 }) })
    const body = (await response.json()) as { result?: unknown; error?: unknown }
    if (body.error !== undefined) throw new Error(`${name}: ${JSON.stringify(body.error)}`)
    return body.result
  }
  const session = await call('session.login_with_password', ['root', PASSWORD, '1.0', 'test'])
  return call(method, [session, ...params])
}

const rename = (url: string, record: XoRecord, name: string): Promise<unknown> => rpc(url, 'VM.set_name_label', [record['_xapiRef'], name])

/**
 * After a fault, the index equals what a fresh connection fetches, and what
 * a subscriber saw replays from the state before to the state served: no
 * change missed, none published twice, identity kept for what did not change.
 */
async function survives(t: Test, fault: (simulator: RunningSimulator) => Promise<string>, options: XapiDriverOptions = {}): Promise<void> {
  const { simulator, driver } = await simulatedPool(t, { driver: options })
  const before = served(driver)
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  const first = named(driver, 'VM', 'web-01')
  const second = named(driver, 'VM', 'db-01')
  await rename(simulator.url, first, 'renamed before the fault')
  const url = await fault(simulator)
  await rename(url, second, 'renamed after the fault')
  await driver.settled()
  t.equal(driver.getObject(first.id)?.['name_label'], 'renamed before the fault')
  t.equal(driver.getObject(second.id)?.['name_label'], 'renamed after the fault')
  const fresh = (await connectDriver(t, url)).driver
  t.same(Object.fromEntries(served(driver)), Object.fromEntries(served(fresh)), 'the index equals a fresh full fetch')
  const { state, problems } = replay(before, changes)
  t.same(problems, [], 'each published change follows from the state before it')
  const mismatched = [...new Set([...state.keys(), ...served(driver).keys()])].filter((id) => state.get(id) !== driver.getObject(id))
  t.same(mismatched, [], 'the changes replay to the very records served')
  t.ok(changes.every((change) => change.kind === 'update'), 'only updates: nothing was removed and added again')
}

t.test('faults: every session invalidated', (t) => survives(t, async (simulator) => (await injectFault(simulator.url, { invalidate_sessions: true }), simulator.url)))

t.test('faults: the event log lost (EVENTS_LOST, a full fetch diffed against the index)', (t) =>
  survives(t, async (simulator) => (await injectFault(simulator.url, { lose_events: true }), simulator.url)))

t.test('faults: the master stopped and a member promoted', (t) =>
  survives(t, async (simulator) => {
    const hosts = (await rpc(simulator.url, 'host.get_all_records', [])) as Record<string, { address: string }>
    await injectFault(simulator.url, { stop_master: true })
    const pool = Object.values((await rpc(`http://${Object.values(hosts)[1]?.address ?? ''}:${new URL(simulator.url).port}`, 'pool.get_all_records', [])) as Record<string, { master: string }>)[0]
    const master = hosts[pool?.master ?? '']
    if (master === undefined) throw new Error('no master after stop_master')
    return `http://${master.address}:${new URL(simulator.url).port}`
  }))

t.test('faults: the master stopped and restarted, a change made meanwhile (its session and event token kept)', (t) =>
  survives(
    t,
    async (simulator) => {
      const third = named(simulator.simulator.services.driver, 'VM', 'mail-01')
      const session = await simulator.login()
      await injectFault(simulator.url, { pause_master: true })
      await simulator.simulator.dispatcher.call('VM.set_name_label', [session, third['_xapiRef'], 'renamed during the outage'])
      await injectFault(simulator.url, { pause_master: false })
      return simulator.url
    },
    // Probes given longer than the outage takes on a busy machine: the master must be found again, not the pool lost.
    { probeTimeout: 60_000 },
  ))
