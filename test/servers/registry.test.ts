import t from 'tap'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EventBus } from '../../src/events/bus.js'
import { loadServersKey, SecretBox } from '../../src/servers/crypto.js'
import type { ServerRecord } from '../../src/servers/record.js'
import { backoffDelay } from '../../src/servers/reconnect.js'
import { ServerRegistry } from '../../src/servers/registry.js'
import { ServerStore } from '../../src/servers/store.js'
import { openDatabase, type Db } from '../../src/store/database.js'
import { FakePools, ManualScheduler } from '../helpers/fake-pools.js'

const POOL = { poolId: 'pool-1', poolNameLabel: 'Lab pool', master: 'host-1', username: 'root', password: 'right' }
const BACKOFF = { initial: 1000, max: 8000 }

interface Harness {
  readonly registry: ServerRegistry
  readonly pools: FakePools
  readonly scheduler: ManualScheduler
  readonly db: Db
  readonly dataDir: string
  /** every status published, per entry, in order */
  readonly statuses: Map<string, string[]>
  /** resolves with the record once the entry shows this status */
  status(id: string, status: ServerRecord['status']): Promise<ServerRecord>
  reopen(): Harness
}

function harness(t: { teardown: (fn: () => Promise<void>) => void }, reused?: string, pools = new FakePools()): Harness {
  const dataDir = reused ?? mkdtempSync(join(tmpdir(), 'keel-servers-'))
  if (reused === undefined) t.teardown(async () => rmSync(dataDir, { recursive: true, force: true }))
  const db = openDatabase(dataDir)
  const bus = new EventBus()
  const scheduler = new ManualScheduler()
  const statuses = new Map<string, string[]>()
  const waiters = new Set<(record: ServerRecord) => void>()
  bus.subscribe((change) => {
    if (change.kind === 'remove') return
    const record = change.object as ServerRecord
    if (change.previous === undefined || (change.previous as ServerRecord).status !== record.status) {
      statuses.set(record.id, [...(statuses.get(record.id) ?? []), record.status])
    }
    for (const waiter of [...waiters]) waiter(record)
  })
  const quiet = { info: () => {}, warn: () => {} }
  const registry = new ServerRegistry({
    store: new ServerStore(db, new SecretBox(() => loadServersKey(dataDir)), () => 0),
    connector: pools,
    bus,
    scheduler,
    backoff: BACKOFF,
    random: () => 0.5,
    log: quiet,
  })
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await registry.close()
    db.close()
  }
  t.teardown(close)
  const made: Harness = {
    registry,
    pools,
    scheduler,
    db,
    dataDir,
    statuses,
    status: (id, status) =>
      new Promise((resolve) => {
        const now = registry.get(id)
        if (now?.status === status) return resolve(now)
        const check = (record: ServerRecord): void => {
          if (record.id !== id || record.status !== status) return
          waiters.delete(check)
          resolve(record)
        }
        waiters.add(check)
      }),
    reopen: () => {
      void close()
      return harness(t, dataDir, pools)
    },
  }
  return made
}

const input = (host: string, password = 'right') => ({ host, username: 'root', password, allowUnauthorized: false, readOnly: false })

t.test('backoff doubles from the initial delay up to the cap, jittered in its upper half', async (t) => {
  t.same([0, 1, 2, 3, 4, 10].map((attempt) => backoffDelay(attempt, BACKOFF, () => 0)), [500, 1000, 2000, 4000, 4000, 4000])
  t.same([0, 1, 2, 3, 4, 10].map((attempt) => backoffDelay(attempt, BACKOFF, () => 1)), [1000, 2000, 4000, 8000, 8000, 8000])
  t.equal(backoffDelay(1e6, BACKOFF, () => 0.5), 6000, 'no overflow on a long outage')
})

t.test('an unreachable pool is retried with backoff until it answers', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  h.pools.failNetwork('pool.example', 3)
  const id = h.registry.create(input('pool.example'))
  for (let failure = 1; failure <= 3; failure++) {
    await h.scheduler.scheduled()
    const record = h.registry.get(id)
    t.equal(record?.status, 'disconnected')
    t.match(record?.error, { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED pool.example' })
    h.scheduler.runAll()
  }
  const connected = await h.status(id, 'connected')
  t.same(h.scheduler.delays, [750, 1500, 3000], 'each wait doubles, jittered')
  t.equal(connected.error, undefined, 'a connection clears the error')
  t.match(connected, { poolId: 'pool-1', master: 'host-1', poolNameLabel: 'Lab pool', label: 'Lab pool' })
  t.same(h.statuses.get(id), ['disconnected', 'connecting', 'disconnected', 'connecting', 'disconnected', 'connecting', 'disconnected', 'connecting', 'connected'])
  t.equal(h.pools.attempts.length, 4)
})

t.test('bad credentials are never retried; the error stays until the entry changes', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  const id = h.registry.create(input('pool.example', 'wrong'))
  await h.pools.attemptsMade(1)
  const failed = await h.status(id, 'disconnected')
  t.match(failed.error, { name: 'XapiError', code: 'SESSION_AUTHENTICATION_FAILED', params: ['root', 'Authentication failure'] })
  t.equal(h.scheduler.pending, 0, 'no retry scheduled')

  const again = h.reopen()
  t.equal(again.registry.get(id)?.error?.code, 'SESSION_AUTHENTICATION_FAILED', 'kept across a restart')
  again.registry.start()
  t.equal(again.pools.attempts.length, 1, 'a restart does not try the refused credentials again')
  t.equal(again.scheduler.pending, 0)

  await again.registry.update(id, { password: 'right' })
  const connected = await again.status(id, 'connected')
  t.equal(connected.error, undefined)
  t.equal(again.pools.attempts.at(-1)?.password, 'right', 'the new password, decrypted')
})

t.test('a lost connection is retried, and a restart connects enabled entries', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  const id = h.registry.create(input('pool.example'))
  await h.status(id, 'connected')
  h.pools.lose('pool.example', new Error('socket hang up'))
  const lost = await h.status(id, 'disconnected')
  t.match(lost.error, { message: 'socket hang up' })
  t.equal(lost.poolId, undefined, 'no pool while disconnected')
  await h.scheduler.scheduled()
  t.same(h.scheduler.delays, [750])
  h.scheduler.runAll()
  await h.status(id, 'connected')

  const again = h.reopen()
  again.registry.start()
  await again.status(id, 'connected')
  t.equal(again.pools.attempts.length, 3)
})

t.test('the certificate seen first is pinned; a changed one is refused and not retried', async (t) => {
  const h = harness(t)
  const pool = h.pools.add('pool.example', { ...POOL, fingerprint: 'AA:BB' })
  const id = h.registry.create(input('pool.example'))
  t.equal((await h.status(id, 'connected')).fingerprint, 'AA:BB')
  t.equal(h.pools.attempts[0]?.fingerprint, undefined, 'nothing pinned before the first connection')

  pool.fingerprint = 'CC:DD'
  h.pools.lose('pool.example')
  await h.scheduler.scheduled()
  h.scheduler.runAll()
  await h.pools.attemptsMade(2)
  t.equal(h.pools.attempts[1]?.fingerprint, 'AA:BB', 'the pin is passed to the connector')
  const refused = await h.status(id, 'disconnected')
  t.match(refused.error, { code: 'CERTIFICATE_CHANGED', message: /certificate of pool.example changed .*pinned AA:BB, presented CC:DD/ })
  t.equal(h.scheduler.pending, 0, 'an impostor is not retried')
  t.equal(refused.fingerprint, 'AA:BB', 'the pin stays')
  t.notOk(h.pools.connected('pool-1'), 'the connection that presented it was logged out')

  await h.registry.update(id, { fingerprint: null })
  t.equal((await h.status(id, 'connected')).fingerprint, 'CC:DD', 'cleared, the pin is taken anew')
})

t.test('one pool, one connection: a second entry for a connected pool is refused and not retried', async (t) => {
  const h = harness(t)
  h.pools.add('master.example', { ...POOL })
  h.pools.add('alias.example', { ...POOL })
  const first = h.registry.create(input('master.example'))
  await h.status(first, 'connected')
  const second = h.registry.create(input('alias.example'))
  await h.pools.attemptsMade(2)
  const refused = await h.status(second, 'disconnected')
  t.match(refused.error, { name: 'PoolAlreadyConnected', code: 'POOL_ALREADY_CONNECTED', message: 'this pool is already connected' })
  t.equal(h.scheduler.pending, 0)
  t.equal(h.registry.get(first)?.status, 'connected', 'the first connection is untouched')
  t.equal(h.pools.logouts.length, 0)
})

t.test('connect and disconnect say 409 when already so; disconnect stops retries', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  h.pools.failNetwork('pool.example', 1)
  const id = h.registry.create(input('pool.example'))
  await h.scheduler.scheduled()
  await h.registry.disconnect(id)
  t.equal(h.scheduler.pending, 0, 'the pending retry is cancelled')
  t.equal(h.registry.get(id)?.enabled, false)
  t.throws(() => h.registry.disconnect(id), { code: 'INCORRECT_STATE', data: { actual: 'disconnected', object: id } })

  h.pools.hold('pool.example')
  const connecting = h.registry.connect(id)
  t.equal(h.registry.get(id)?.status, 'connecting', 'connecting as soon as asked')
  t.throws(() => h.registry.connect(id), { code: 'INCORRECT_STATE', data: { actual: 'connecting', expected: 'disconnected' } })
  h.pools.release('pool.example')
  t.equal(await connecting, undefined)
  t.throws(() => h.registry.connect(id), { code: 'INCORRECT_STATE', data: { actual: 'connected' } })
  t.equal(h.registry.get(id)?.enabled, true)
})

t.test('a disconnect during an attempt abandons it; a delete logs out first', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  h.pools.hold('pool.example')
  const id = h.registry.create(input('pool.example'))
  await h.pools.attemptsMade(1)
  await h.registry.disconnect(id)
  h.pools.release('pool.example')
  t.equal(h.registry.get(id)?.status, 'disconnected')
  t.notOk(h.pools.connected('pool-1'))

  const other = h.registry.create(input('other.example'))
  await h.scheduler.scheduled()
  h.pools.add('other.example', { ...POOL, poolId: 'pool-2' })
  h.scheduler.runAll()
  await h.status(other, 'connected')
  await h.registry.delete(other)
  t.same(h.pools.logouts, ['other.example'])
  t.equal(h.registry.get(other), undefined)
  t.throws(() => h.registry.connect(other), { code: 'NO_SUCH_OBJECT' })
})

t.test('credentials are sealed at rest with the key beside the database', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  const id = h.registry.create({ ...input('pool.example'), readOnly: true })
  await h.status(id, 'connected')
  t.equal(h.pools.attempts[0]?.readOnly, true, 'readOnly is passed on')
  const stored = h.db.prepare('SELECT password FROM servers WHERE id = ?').pluck().get(id) as string
  t.notMatch(stored, /right/)
  t.match(stored, /^v1:/)
  t.equal(statSync(join(h.dataDir, 'servers.key')).mode & 0o777, 0o600)
  const box = new SecretBox(() => loadServersKey(h.dataDir))
  t.equal(box.open(stored, id), 'right')
  t.throws(() => box.open(stored, 'another-entry'), 'a ciphertext moved to another row does not open')
  t.throws(() => new SecretBox(() => Buffer.alloc(32)).open(stored, id), 'nor with another key')
})

t.test('a password sealed with another key is reported, not retried, and mended by setting it again', async (t) => {
  const h = harness(t)
  h.pools.add('pool.example', { ...POOL })
  const id = h.registry.create(input('pool.example'))
  await h.status(id, 'connected')
  writeFileSync(join(h.dataDir, 'servers.key'), Buffer.alloc(32, 7))
  const again = h.reopen()
  again.registry.start()
  const failed = await again.status(id, 'disconnected')
  await again.pools.attemptsMade(1)
  t.equal(again.pools.attempts.length, 1, 'the connector was not asked')
  t.match(failed.error, { code: 'SERVER_CREDENTIALS_UNREADABLE', message: /cannot be decrypted with servers.key/ })
  t.equal(again.scheduler.pending, 0)
  await again.registry.update(id, { password: 'right' })
  await again.status(id, 'connected')
})
