import t from 'tap'
import { isKeelError } from '../../src/errors.js'
import { onHost, poolOrigin } from '../../src/driver/xapi/address.js'
import { TokenBarrier } from '../../src/driver/xapi/barrier.js'
import { Limiter } from '../../src/driver/xapi/limiter.js'
import { TaskFollowers, taskOutcome } from '../../src/driver/xapi/tasks.js'
import { normalizeFingerprint } from '../../src/driver/xapi/tls.js'
import { XapiError } from '../../src/driver/xapi/types.js'
import { failure } from '../helpers/xapi-driver.js'

t.test('barrier: a wait resolves once a token at or past it is applied, gives up with INDEX_TIMEOUT, fails on close', async (t) => {
  const barrier = new TokenBarrier()
  barrier.reached('0000000005')
  await barrier.wait('0000000004', 1000)
  const later = barrier.wait('0000000007', 60_000)
  barrier.reached('0000000006')
  barrier.reached('0000000008')
  await later
  const timedOut = await failure(barrier.wait('0000000009', 10))
  t.ok(isKeelError(timedOut) && timedOut.code === 'INDEX_TIMEOUT', String(timedOut))
  const pending = barrier.wait('0000000010', 60_000)
  barrier.close(new Error('closed'))
  t.match(await failure(pending), { message: 'closed' })
})

t.test('tasks: a result parsed from its XML-RPC text, a failure as its XapiError, progress as percents', async (t) => {
  t.equal(taskOutcome('OpaqueRef:t', { status: 'success', result: '<value>OpaqueRef:vm</value>' }), 'OpaqueRef:vm')
  t.same(taskOutcome('OpaqueRef:t', { status: 'success', result: '<value><array><data><value>a</value><value><double>0.5</double></value></data></array></value>' }), ['a', 0.5])
  t.equal(taskOutcome('OpaqueRef:t', { status: 'success', result: '' }), undefined, 'void')
  t.throws(() => taskOutcome('OpaqueRef:t', { status: 'failure', error_info: ['VM_BAD_POWER_STATE', 'OpaqueRef:vm', 'halted', 'running'] }), new XapiError('VM_BAD_POWER_STATE', ['OpaqueRef:vm', 'halted', 'running']))
  t.throws(() => taskOutcome('OpaqueRef:t', { status: 'cancelled' }), new XapiError('TASK_CANCELLED', ['OpaqueRef:t']))

  const followers = new TaskFollowers()
  const progress: number[] = []
  const settled = followers.follow('OpaqueRef:t', (percent) => progress.push(percent))
  followers.changed('OpaqueRef:other', { status: 'success', progress: 1 })
  followers.changed('OpaqueRef:t', { status: 'pending', progress: 0.25 })
  followers.changed('OpaqueRef:t', { status: 'success', progress: 1 })
  t.match(await settled, { status: 'success' })
  t.same(progress, [25, 100])
  const deleted = followers.follow('OpaqueRef:gone')
  followers.changed('OpaqueRef:gone', undefined)
  t.same(await failure(deleted), new XapiError('HANDLE_INVALID', ['task', 'OpaqueRef:gone']), 'deleted before it settled')
})

t.test('tasks: reread settles what settled unseen, fails what XAPI forgot, leaves the rest to the events', async (t) => {
  const followers = new TaskFollowers()
  const done = followers.follow('OpaqueRef:done')
  const gone = followers.follow('OpaqueRef:gone')
  const running = followers.follow('OpaqueRef:running')
  const unreadable = followers.follow('OpaqueRef:unreadable')
  const records = new Map<string, Record<string, unknown>>([
    ['OpaqueRef:done', { status: 'success' }],
    ['OpaqueRef:running', { status: 'pending', progress: 0.5 }],
  ])
  await followers.reread(async (ref) => {
    if (ref === 'OpaqueRef:gone') throw new XapiError('HANDLE_INVALID', ['task', ref])
    const record = records.get(ref)
    if (record === undefined) throw new Error('socket reset')
    return record
  })
  t.match(await done, { status: 'success' })
  t.same(await failure(gone), new XapiError('HANDLE_INVALID', ['task', 'OpaqueRef:gone']))
  followers.changed('OpaqueRef:running', { status: 'success' })
  followers.changed('OpaqueRef:unreadable', { status: 'failure' })
  t.match(await running, { status: 'success' }, 'a pending task still followed')
  t.match(await unreadable, { status: 'failure' }, 'a task whose read failed still followed')
})

t.test('addresses and fingerprints', async (t) => {
  t.equal(poolOrigin('xcp-01.example:8443', false).href, 'https://xcp-01.example:8443/')
  t.equal(poolOrigin('https://10.0.0.1', false).href, 'https://10.0.0.1/')
  t.throws(() => poolOrigin('http://10.0.0.1', false), new XapiError('INVALID_POOL_ADDRESS', ['http://10.0.0.1']))
  t.equal(poolOrigin('http://127.0.0.1:80', true).href, 'http://127.0.0.1/')
  t.equal(onHost(new URL('https://10.0.0.1:8443'), 'fd00::2').href, 'https://[fd00::2]:8443/', 'a bare IPv6 address is bracketed')
  t.equal(onHost(new URL('https://10.0.0.1'), '10.0.0.2').href, 'https://10.0.0.2/')
  t.equal(normalizeFingerprint('ab:cd:EF'), 'AB:CD:EF')
  t.equal(normalizeFingerprint('abcdef'), 'AB:CD:EF')
})

t.test('limiter: at most N calls run at once, the others in order', async (t) => {
  const limiter = new Limiter(2)
  let running = 0
  let most = 0
  const order: number[] = []
  const releases: Array<() => void> = []
  const calls = [0, 1, 2, 3].map((i) =>
    limiter.run(async () => {
      running++
      most = Math.max(most, running)
      order.push(i)
      await new Promise<void>((resolve) => releases.push(resolve))
      running--
    }),
  )
  while (order.length < 4) {
    await new Promise((resolve) => setImmediate(resolve))
    releases.shift()?.()
  }
  releases.forEach((release) => release())
  await Promise.all(calls)
  t.equal(most, 2)
  t.same(order, [0, 1, 2, 3])
})
