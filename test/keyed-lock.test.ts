import t from 'tap'
import { KeyedLock } from '../src/keyed-lock.js'

/** A promise and its resolvers, to let work end exactly when a test says. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void; fail: (error: Error) => void } {
  let open!: (value: T) => void
  let fail!: (error: Error) => void
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve
    fail = reject
  })
  return { promise, open, fail }
}

t.test('work on one key runs one at a time, in call order', async (t) => {
  const lock = new KeyedLock<string>()
  const events: string[] = []
  const first = gate()
  const second = gate()
  const a = lock.run('k', async () => {
    events.push('a start')
    await first.promise
    events.push('a end')
    return 'a'
  })
  const b = lock.run('k', async () => {
    events.push('b start')
    await second.promise
    events.push('b end')
    return 'b'
  })
  const c = lock.run('k', async () => {
    events.push('c start')
    return 'c'
  })
  second.open()
  first.open()
  t.same(await Promise.all([a, b, c]), ['a', 'b', 'c'])
  t.same(events, ['a start', 'a end', 'b start', 'b end', 'c start'], 'each started after the one before ended, though b could end first')
})

t.test('different keys run side by side', async (t) => {
  const lock = new KeyedLock<string>()
  const bStarted = gate()
  // a only ends once b has started: were the keys serialized, neither would settle.
  const a = lock.run('a', async () => {
    await bStarted.promise
    return 'a'
  })
  const b = lock.run('b', async () => {
    bStarted.open()
    return 'b'
  })
  t.same(await Promise.all([a, b]), ['a', 'b'])
})

t.test('a rejection reaches its caller only, and the key runs on', async (t) => {
  const lock = new KeyedLock<string>()
  const failing = gate()
  const failed = lock.run('k', () => failing.promise)
  const thrown = lock.run('k', async () => {
    throw new Error('thrown')
  })
  const next = lock.run('k', async () => 'next')
  failing.fail(new Error('rejected'))
  await t.rejects(failed, { message: 'rejected' })
  await t.rejects(thrown, { message: 'thrown' })
  t.equal(await next, 'next')
  t.equal(await lock.run('k', async () => 'after'), 'after', 'a later call is not wedged either')
})

t.test('an idle key is forgotten by the time its last caller resumes', async (t) => {
  const lock = new KeyedLock<string>()
  const held = gate()
  const running = lock.run('a', () => held.promise)
  const waiting = lock.run('a', async () => 'second')
  const other = lock.run('b', async () => 'b')
  t.equal(lock.size, 2, 'a key is held while work on it runs or waits')
  await other
  t.equal(lock.size, 1)
  held.open()
  await running
  t.equal(lock.size, 1, 'still held for the waiting work')
  await waiting
  t.equal(lock.size, 0)
  await t.rejects(lock.run('c', async () => Promise.reject(new Error('no'))))
  t.equal(lock.size, 0, 'a rejection frees its key too')
})
