import t from 'tap'
import type { ObjectChange, XoRecord } from '../../src/driver/types.js'
import { EventBus } from '../../src/events/bus.js'
import { toFeedEvent } from '../../src/events/feeds.js'
import { EventLog, type LoggedChange } from '../../src/events/log.js'
import { watchFormat } from '../../src/events/watch-format.js'
import { subscriptionFormat } from '../../src/events/sse-format.js'
import { chunkPayload } from '../../src/http/chunk.js'

const vm = (id: string, fields: Record<string, unknown> = {}): XoRecord => ({ id, type: 'VM', ...fields })
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

function makeLog(options: { maxEvents?: number; maxBytes?: number; window?: number; minAge?: number } = {}) {
  const bus = new EventBus()
  let now = 0
  const log = new EventLog(bus, {
    maxEvents: options.maxEvents ?? 1000,
    maxBytes: options.maxBytes ?? 1 << 20,
    window: options.window ?? 60_000,
    minAge: options.minAge ?? 0,
    clock: () => now,
    sizeOf: () => 100,
    collectionsOf: (change) => [change.object.type],
    onReaderError: () => {},
  })
  return { bus, log, advance: (ms: number) => (now += ms) }
}

t.test('numbers increase from the boot number; readers are told after the commit, in one batch', async (t) => {
  const { bus, log } = makeLog()
  t.teardown(() => log.close())
  const batches: number[][] = []
  log.read((entries) => batches.push(entries.map((entry) => entry.seq)))
  bus.publish({ kind: 'add', object: vm('a') })
  bus.publish({ kind: 'add', object: vm('b') })
  t.same(batches, [], 'not inside the commit')
  t.equal(log.announced, log.boot)
  await turn()
  t.same(batches, [[log.boot + 1, log.boot + 2]])
  t.equal(log.announced, log.boot + 2)
  t.same(log.since(log.boot + 1)?.map((entry) => entry.seq), [log.boot + 2])
  t.ok(log.boot > Date.now() * 1000 - 60_000_000, 'the boot number comes from the start time')
})

t.test('bounds by count, bytes and age; a dropped range answers undefined', async (t) => {
  const cases = [
    { name: 'count', options: { maxEvents: 3 }, age: 0, kept: 3 },
    { name: 'bytes', options: { maxBytes: 250 }, age: 0, kept: 2 },
    { name: 'age', options: { window: 1000 }, age: 2000, kept: 0 },
  ]
  for (const { name, options, age, kept } of cases) {
    const { bus, log, advance } = makeLog(options)
    for (let i = 0; i < 5; i++) bus.publish({ kind: 'add', object: vm(`v${i}`) })
    await turn()
    advance(age)
    const last = log.boot + 5
    t.equal(log.since(last - kept)?.length, kept, `${name}: the kept events`)
    t.equal(log.since(last - kept - 1), undefined, `${name}: one more is no longer held`)
    t.equal(log.since(last + 1), undefined, `${name}: a future number is not held`)
    log.close()
  }
})

const logged = (change: ObjectChange): LoggedChange => ({ seq: 7, at: 0, change })
const onlyVms = (record: XoRecord): XoRecord | undefined => (record.type === 'VM' ? record : undefined)

t.test('a change as a collection sees it', async (t) => {
  const template = { id: 'x', type: 'VM-template' }
  const rows: Array<[string, ObjectChange, string | undefined]> = [
    ['add', { kind: 'add', object: vm('x') }, 'add'],
    ['update', { kind: 'update', object: vm('x', { n: 2 }), previous: vm('x', { n: 1 }) }, 'update'],
    ['remove', { kind: 'remove', object: vm('x') }, 'remove'],
    ['converted away', { kind: 'update', object: template, previous: vm('x') }, 'remove'],
    ['converted in', { kind: 'update', object: vm('x'), previous: template }, 'add'],
    ['update without previous', { kind: 'update', object: vm('x') }, 'update'],
    ['another collection', { kind: 'add', object: template }, undefined],
  ]
  for (const [name, change, kind] of rows) t.equal(toFeedEvent(logged(change), onlyVms)?.kind, kind, name)
})

t.test('watch lines judge the filter on both sides', async (t) => {
  const format = watchFormat({
    fields: 'name',
    paths: [['name']],
    predicate: (record) => record['name'] === 'in',
    numbered: false,
    hrefOf: (id) => `/rest/v0/vms/${id}`,
    withHref: () => Buffer.from(''),
  })
  const line = (change: ObjectChange): string | undefined => {
    const event = toFeedEvent(logged(change), onlyVms)
    const chunk = event === undefined ? undefined : format(event)
    return chunk === undefined ? undefined : chunkPayload(chunk).toString()
  }
  const rows: Array<[string, ObjectChange, string | undefined]> = [
    ['enters', { kind: 'update', object: vm('x', { name: 'in' }), previous: vm('x', { name: 'out' }) }, '["update",{"name":"in","href":"/rest/v0/vms/x"}]\n'],
    ['leaves', { kind: 'update', object: vm('x', { name: 'out' }), previous: vm('x', { name: 'in' }) }, '["remove",{"href":"/rest/v0/vms/x"}]\n'],
    ['never matches', { kind: 'update', object: vm('x', { name: 'out' }), previous: vm('x', { name: 'other' }) }, undefined],
    ['added outside', { kind: 'add', object: vm('x', { name: 'out' }) }, undefined],
    ['removed inside', { kind: 'remove', object: vm('x', { name: 'in' }) }, '["remove",{"href":"/rest/v0/vms/x"}]\n'],
    ['removed outside', { kind: 'remove', object: vm('x', { name: 'out' }) }, undefined],
  ]
  for (const [name, change, expected] of rows) t.equal(line(change), expected, name)
})

t.test('subscription frames: $subscription first, suppression only with fields', async (t) => {
  const bytesOf = (record: XoRecord): Buffer => Buffer.from(JSON.stringify(record))
  const event = toFeedEvent(logged({ kind: 'update', object: vm('x', { a: 1, b: 2 }), previous: vm('x', { a: 1, b: 1 }) }), onlyVms)!
  t.equal(subscriptionFormat('VM', [['a']], bytesOf)(event), undefined, 'a change outside the fields is not sent')
  // Each frame is one HTTP chunk, its size in hex first.
  t.equal(subscriptionFormat('VM', [['b']], bytesOf)(event)?.toString(), '38\r\nid: 7\nevent: update\ndata: {"$subscription":"VM","b":2}\n\n\r\n')
  t.equal(
    subscriptionFormat('VM', undefined, bytesOf)(event)?.toString(),
    '53\r\nid: 7\nevent: update\ndata: {"$subscription":"VM","id":"x","type":"VM","a":1,"b":2}\n\n\r\n',
  )
})

t.test('a record’s successive updates are kept as its latest, against the record as a resuming client had it', async (t) => {
  const { bus, log } = makeLog({ maxEvents: 3 })
  t.teardown(() => log.close())
  const live: Array<unknown> = []
  log.read((entries) => live.push(...entries.map((entry) => entry.change.previous?.['n'])))
  bus.publish({ kind: 'add', object: vm('other') })
  for (let n = 1; n <= 100; n++) bus.publish({ kind: 'update', object: vm('busy', { n }), previous: vm('busy', { n: n - 1 }) })
  bus.publish({ kind: 'add', object: vm('late') })
  await turn()
  t.equal(live.length, 102, 'live readers had every update')
  const all = log.since(log.boot)
  t.same(
    all?.map((entry) => [entry.change.kind, entry.change.object.id, entry.change.object['n'], entry.change.previous?.['n']]),
    [
      ['add', 'other', undefined, undefined],
      ['update', 'busy', 100, 0],
      ['add', 'late', undefined, undefined],
    ],
    'the churn holds one entry: the other changes are still held under a bound of 3',
  )
  const middle = log.since(log.boot + 50)
  t.same(middle?.map((entry) => [entry.change.object.id, entry.change.previous]), [['busy', undefined], ['late', undefined]], 'resuming in the middle: the previous state is unknown')
  t.same(log.since(log.boot + 101)?.map((entry) => entry.change.object.id), ['late'])
})

t.test('the count bound spares events younger than the minimum age', async (t) => {
  const { bus, log, advance } = makeLog({ maxEvents: 2, minAge: 1000 })
  t.teardown(() => log.close())
  for (let i = 0; i < 5; i++) bus.publish({ kind: 'add', object: vm(`v${i}`) })
  await turn()
  t.equal(log.since(log.boot)?.length, 5, 'all kept while young')
  advance(1000)
  t.equal(log.since(log.boot), undefined)
  t.equal(log.since(log.boot + 3)?.length, 2, 'then the bound applies')
})

t.test('each collection resumes while none of its own events was let go of', async (t) => {
  const { bus, log, advance } = makeLog({ maxEvents: 2 })
  t.teardown(() => log.close())
  bus.publish({ kind: 'add', object: vm('a') })
  advance(500)
  for (const id of ['h1', 'h2', 'h3']) bus.publish({ kind: 'add', object: { id, type: 'host' } })
  await turn()
  t.same(log.since(log.boot + 1, 'VM')?.map((entry) => entry.change.object.id), ['h2', 'h3'], 'VM: nothing of it was dropped after 1 (feeds keep what is theirs)')
  t.equal(log.since(log.boot + 1, 'host'), undefined, 'host: h1 was dropped')
  t.equal(log.since(log.boot + 1), undefined, 'all collections: neither')
  advance(1500)
  t.same(log.windows(['VM', 'host', 'SR']), new Map([['VM', 2000], ['host', 1500], ['SR', 2000]]), 'how far back each resumes')
})
