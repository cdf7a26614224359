import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { X509Certificate } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { XapiConnection } from '../../src/driver/xapi/connection.js'
import { certificateFile } from '../../src/simulator/certificate.js'
import { openSimulator } from '../../src/simulator/simulator.js'
import { XapiDriver } from '../../src/driver/xapi/driver.js'
import { XapiError, type PoolConnectionSettings, type XapiPool } from '../../src/driver/xapi/types.js'
import type { ObjectChange } from '../../src/driver/types.js'
import { XapiTransportError } from '../../src/driver/xapi/transport.js'
import { connectDriver, simulatedPool, failure } from '../helpers/xapi-driver.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

const settings = (host: string, more: Partial<PoolConnectionSettings> = {}): PoolConnectionSettings => ({ host, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false, ...more })

function firstPool(driver: XapiDriver): XapiPool {
  const [pool] = driver.pools
  if (pool === undefined) throw new Error('no pool connected')
  return pool
}

t.test('connecting through a member follows HOST_IS_SLAVE to the master', async (t) => {
  const simulator = await startSimulator(t)
  const member = `http://127.0.0.2:${new URL(simulator.url).port}`
  const { driver, pool } = await connectDriver(t, member)
  t.equal(pool.poolNameLabel, 'Demo pool')
  t.equal(driver.getObject(pool.master)?.['address'], '127.0.0.1', 'the master named is the host at the address the pool has')
  t.equal(driver.countOfType('VM'), 12)
  t.equal(pool.fingerprint, undefined, 'no certificate over plain HTTP')
})

t.test('a wrong password is SESSION_AUTHENTICATION_FAILED, and nothing is indexed', async (t) => {
  const simulator = await startSimulator(t)
  const driver = new XapiDriver({ allowHttp: true, graceDelay: 0 })
  t.teardown(() => driver.close())
  await driver.open()
  const error = await failure(driver.connect(settings(simulator.url, { password: 'wrong' }), new AbortController().signal))
  t.ok(error instanceof XapiError && error.code === 'SESSION_AUTHENTICATION_FAILED', String(error))
  t.equal(driver.countOfType('VM'), 0)
  t.same(driver.pools, [])
})

t.test('plain http:// is refused unless allowed', async (t) => {
  const simulator = await startSimulator(t)
  const driver = new XapiDriver({ graceDelay: 0 })
  t.teardown(() => driver.close())
  const error = await failure(driver.connect(settings(simulator.url), new AbortController().signal))
  t.ok(error instanceof XapiError && error.code === 'INVALID_POOL_ADDRESS', String(error))
})

t.test('a pool already connected is refused with POOL_ALREADY_CONNECTED, the first connection untouched', async (t) => {
  const { simulator, driver, pool } = await simulatedPool(t)
  const before = [...driver.objectsOfType('VM')]
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  const error = await failure(driver.connect(settings(`http://127.0.0.3:${new URL(simulator.url).port}`), new AbortController().signal))
  t.ok(error instanceof XapiError && error.code === 'POOL_ALREADY_CONNECTED' && error.params[0] === pool.poolId, String(error))
  t.equal(driver.pools.length, 1)
  t.same(changes, [], 'nothing published')
  t.ok([...driver.objectsOfType('VM')].every((record, i) => record === before[i]), 'every record the same object')
})

t.test('calls: version skew falls back once; a XAPI error is a XapiError {code, params}', async (t) => {
  const { driver } = await simulatedPool(t)
  const pool = firstPool(driver)
  const [vm] = driver.objectsOfType('VM')
  const ref = vm?.['_xapiRef']
  t.equal(await pool.call('VM.get_no_such_field', [ref], { fallback: { method: 'VM.get_name_label', params: [ref] } }), vm?.['name_label'], 'MESSAGE_METHOD_UNKNOWN: the fallback method')
  t.equal(await pool.call('VM.get_name_label', [ref, 'a parameter of a later release'], { fallback: { params: [ref] } }), vm?.['name_label'], 'MESSAGE_PARAMETER_COUNT_MISMATCH: the fallback parameters')
  const unknown = await failure(pool.call('VM.get_no_such_field', [ref]))
  t.ok(unknown instanceof XapiError && unknown.code === 'MESSAGE_METHOD_UNKNOWN' && unknown.params[0] === 'VM.get_no_such_field', String(unknown))
  const invalid = await failure(pool.call('VM.get_name_label', ['OpaqueRef:nothing']))
  t.ok(invalid instanceof XapiError && invalid.code === 'HANDLE_INVALID', String(invalid))
})

t.test('callAsync: the task followed to its end, progress reported, the result parsed, the task destroyed', async (t) => {
  const { driver } = await simulatedPool(t)
  const pool = firstPool(driver)
  const vm = [...driver.objectsOfType('VM')].find((record) => record['power_state'] === 'Halted')
  const progress: number[] = []
  const snapshot = await pool.callAsync<string>('VM.snapshot', [vm?.['_xapiRef'], 'callAsync'], { progress: (percent) => progress.push(percent) })
  t.match(snapshot, /^OpaqueRef:/)
  t.equal(progress.at(-1), 100)
  await pool.settled()
  t.equal(driver.recordOf(pool, snapshot)?.type, 'VM-snapshot', 'the new snapshot is indexed once settled')
  const tasks = await pool.call<Record<string, { name_label: string }>>('task.get_all_records', [])
  t.notOk(Object.values(tasks).some((task) => task.name_label.includes('VM.snapshot')), 'no settled task left behind')

  const failed = await failure(pool.callAsync('VM.pause', [vm?.['_xapiRef']]))
  t.ok(failed instanceof XapiError && failed.code === 'VM_BAD_POWER_STATE', String(failed))

  const controller = new AbortController()
  controller.abort()
  const before = await failure(pool.callAsync('VM.start', [vm?.['_xapiRef'], false, false], { signal: controller.signal }))
  t.ok(before instanceof XapiError && before.code === 'TASK_CANCELLED', 'aborted before it starts: cancelled')
  await pool.settled()
  t.equal(driver.getObject(String(vm?.id))?.['power_state'], 'Halted', 'and not started')
})

t.test('disconnect: the pool\'s objects leave (grace 0), each as a removal', async (t) => {
  const { driver, pool } = await simulatedPool(t)
  const count = driver.countOfType('VM')
  const removed: ObjectChange[] = []
  driver.subscribe((change) => removed.push(change))
  await pool.disconnect()
  t.equal(driver.countOfType('VM'), 0)
  t.ok(removed.length > count && removed.every((change) => change.kind === 'remove'))
  t.same(driver.pools, [])
})

t.test('a pool connected again within the grace delay shows as updates of the records served, not a reset', async (t) => {
  const simulator = await startSimulator(t)
  const { driver, pool } = await connectDriver(t, simulator.url, { graceDelay: 60_000 })
  const vm = [...driver.objectsOfType('VM')][0]
  await pool.disconnect()
  t.equal(driver.getObject(String(vm?.id)), vm, 'still served during the grace delay')
  const session = await simulator.login()
  await simulator.call('VM.set_name_label', [session, vm?.['_xapiRef'], 'renamed while disconnected'])
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  await driver.connect(settings(simulator.url), new AbortController().signal)
  t.same(changes.map((change) => [change.kind, change.object.id]), [['update', vm?.id]], 'one update: what changed meanwhile')
})

t.test('TLS: the certificate verified by default, pinned by its fingerprint, or accepted with allowUnauthorized', async (t) => {
  const simulator = await startSimulator(t, { tls: { names: ['127.0.0.1'] } })
  const pem = readFileSync(certificateFile(simulator.dataDir), 'utf8')
  const fingerprint = new X509Certificate(pem.slice(pem.indexOf('-----BEGIN CERTIFICATE-----'))).fingerprint256
  const driver = new XapiDriver({ graceDelay: 0 })
  t.teardown(() => driver.close())
  const signal = new AbortController().signal

  const unverified = await failure(driver.connect(settings(simulator.url), signal))
  t.match(String(unverified), /self.signed/, 'a self-signed certificate is refused by default')
  const mismatch = await failure(driver.connect(settings(simulator.url, { fingerprint: 'AB:'.repeat(31) + 'AB' }), signal))
  t.ok(mismatch instanceof XapiError && mismatch.code === 'CERTIFICATE_FINGERPRINT_MISMATCH', String(mismatch))
  t.equal(driver.countOfType('VM'), 0)

  const pinned = await driver.connect(settings(simulator.url, { fingerprint: fingerprint.toLowerCase() }), signal)
  t.equal(pinned.fingerprint, fingerprint, 'pinned, any case: the fingerprint presented is reported')
  t.equal(driver.countOfType('VM'), 12)
  await pinned.disconnect()
  const insecure = await driver.connect(settings(simulator.url, { allowUnauthorized: true }), signal)
  t.equal(insecure.fingerprint, fingerprint, 'allowUnauthorized: accepted, its fingerprint reported for pinning')
})

/** A XAPI of a few calls on an ephemeral port, counting each method's calls as they arrive; `slow` answers after a second. */
async function fakeXapi(t: Test): Promise<{ url: string; calls: Map<string, number> }> {
  const calls = new Map<string, number>()
  const answers: Record<string, unknown> = {
    'session.login_with_password': 'OpaqueRef:session',
    'pool.get_all_records': { 'OpaqueRef:pool': { uuid: '5eed0000-0000-4000-8000-000000000001' } },
    'host.get_all_records': { 'OpaqueRef:host': { address: '127.0.0.1' } },
  }
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const { method, id } = JSON.parse(body) as { method: string; id: number }
      calls.set(method, (calls.get(method) ?? 0) + 1)
      // `slow` is taken and never answered: the client's timeout comes first however busy the machine.
      if (method !== 'slow') response.end(JSON.stringify({ jsonrpc: '2.0', result: answers[method] ?? '', id }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise((resolve) => {
        server.close(resolve)
        server.closeAllConnections()
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls }
}

t.test('a call the master took and did not answer in time is not sent again', async (t) => {
  const xapi = await fakeXapi(t)
  const connection = new XapiConnection({ origin: new URL(xapi.url), username: 'root', password: 'p', trust: { mode: 'verify' }, callTimeout: 100 })
  t.teardown(() => connection.close())
  await connection.open()
  const error = await failure(connection.call('slow', []))
  t.ok(error instanceof XapiTransportError && error.timedOut, String(error))
  t.equal(xapi.calls.get('slow'), 1, 'sent once: the master answers the probe, so it was only slow')
  t.equal(xapi.calls.get('session.login_with_password'), 2, 'the probe logged in once')
})

t.test('the event loop’s poll that the master took and did not answer in time is sent again once the master answers the probe: a read runs twice harmlessly (issue 28)', async (t) => {
  const xapi = await fakeXapi(t)
  const connection = new XapiConnection({ origin: new URL(xapi.url), username: 'root', password: 'p', trust: { mode: 'verify' } })
  t.teardown(() => connection.close())
  await connection.open()
  const error = await failure(connection.poll('slow', [], { timeout: 100 }))
  t.ok(error instanceof XapiTransportError && error.timedOut, String(error))
  t.equal(xapi.calls.get('slow'), 2, 'sent again after the failover, once')
  t.equal(connection.sessionGeneration, 1, 'the same master: its session kept')
})

t.test('a pool no host of which answers is lost: `lost` settles with the reason, its objects leave', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-xapi-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const simulator = await openSimulator({ dataDir, password: PASSWORD, stepDelay: 1 })
  const url = await simulator.listen(0, '127.0.0.1')
  const { driver, pool } = await connectDriver(t, url)
  const removed: ObjectChange[] = []
  driver.subscribe((change) => removed.push(change))
  const count = driver.countOfType('VM')
  await simulator.close()
  const reason = await pool.lost
  t.ok(reason instanceof XapiTransportError, String(reason))
  t.same(driver.pools, [])
  t.equal(removed.filter((change) => change.kind === 'remove' && change.object.type === 'VM').length, count, 'each VM removed')
  t.equal(driver.countOfType('VM'), 0)
})
