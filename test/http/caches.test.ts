import t from 'tap'
import { JsonCache } from '../../src/http/json-cache.js'
import { ListingCache } from '../../src/api/listing-cache.js'
import { EventBus } from '../../src/events/bus.js'
import { Versions } from '../../src/events/versions.js'
import type { XoRecord } from '../../src/driver/types.js'

t.test('JsonCache serializes a record once per variant, and again when the record object changes', async (t) => {
  const cache = new JsonCache(1024 * 1024)
  let calls = 0
  const produce = (value: object) => () => {
    calls++
    return JSON.stringify(value)
  }
  const first = Object.freeze({ id: 'a', name: 'one' })
  t.equal(cache.bytes(first, 'record', produce(first)).toString(), '{"id":"a","name":"one"}')
  t.equal(cache.bytes(first, 'record', produce(first)).toString(), '{"id":"a","name":"one"}')
  t.equal(calls, 1)
  t.equal(cache.bytes(first, 'href', () => '"/x/a"').toString(), '"/x/a"', 'a second variant')
  t.equal(cache.bytes(first, 'record', produce(first)).toString(), '{"id":"a","name":"one"}', 'the first variant survives')
  t.equal(calls, 1)
  const changed = Object.freeze({ id: 'a', name: 'two' })
  t.equal(cache.bytes(changed, 'record', produce(changed)).toString(), '{"id":"a","name":"two"}')
  t.equal(calls, 2)
})

t.test('JsonCache stays within its byte bound', async (t) => {
  const cache = new JsonCache(10_000)
  for (let i = 0; i < 1000; i++) {
    const record = { id: String(i), padding: 'x'.repeat(100) }
    cache.bytes(record, 'record', () => JSON.stringify(record))
  }
  t.ok(cache.size <= 10_000, `${cache.size} bytes held`)
  t.ok(cache.size > 5_000)
})

t.test('JsonCache reads a variant through one lookup function, sharing texts with bytes()', async (t) => {
  const cache = new JsonCache(1024 * 1024)
  let calls = 0
  const produce = (record: { id: string }): string => {
    calls++
    return JSON.stringify(record.id)
  }
  const a = Object.freeze({ id: 'a' })
  const b = Object.freeze({ id: 'b' })
  t.equal(cache.bytes(a, 'href', produce).toString(), '"a"')
  const href = cache.variant('href', produce)
  t.equal(href(a).toString(), '"a"', 'a text made by bytes()')
  t.equal(href(b).toString(), '"b"')
  t.equal(calls, 2)
  t.equal(cache.bytes(b, 'href', produce).toString(), '"b"', 'a text made through the variant')
  t.equal(cache.variant('href', produce)(b).toString(), '"b"')
  t.equal(calls, 2)
  t.equal(cache.variant('other', () => 'x')(a).toString(), 'x', 'variants stay apart')
})

t.test('JsonCache drops every variant of an evicted record, and keeps nothing of a record larger than its bound', async (t) => {
  const cache = new JsonCache(2_000)
  let calls = 0
  const produce = (record: { id: string }): string => {
    calls++
    return JSON.stringify({ id: record.id, padding: 'x'.repeat(300) })
  }
  const first = { id: 'first' }
  cache.bytes(first, 'one', produce)
  cache.bytes(first, 'two', produce)
  t.equal(calls, 2)
  for (let i = 0; i < 20; i++) cache.bytes({ id: String(i) }, 'one', produce)
  t.ok(cache.size <= 2_000, `${cache.size} bytes held`)
  calls = 0
  cache.variant('one', produce)(first)
  cache.bytes(first, 'two', produce)
  t.equal(calls, 2, 'both texts made again')

  const small = new JsonCache(100)
  const huge = { id: 'huge' }
  t.equal(small.bytes(huge, 'one', produce).toString(), JSON.stringify({ id: 'huge', padding: 'x'.repeat(300) }))
  t.equal(small.size, 0)
  calls = 0
  small.variant('one', produce)(huge)
  t.equal(calls, 1, 'made again: it was not kept')
})

t.test('JsonCache drops a superseded record at once, and keeps no text made for it afterwards', async (t) => {
  const cache = new JsonCache(1024 * 1024)
  let calls = 0
  const produce = (record: { id: string }): string => {
    calls++
    return JSON.stringify(record)
  }
  const old = Object.freeze({ id: 'a' })
  cache.bytes(old, 'record', produce)
  cache.bytes(old, 'href', produce)
  const current = Object.freeze({ id: 'b' })
  cache.bytes(current, 'record', produce)
  const kept = cache.size
  cache.supersede(old)
  t.ok(cache.size < kept && cache.size > 0, 'only the current record is held')
  const held = cache.size
  calls = 0
  t.equal(cache.bytes(old, 'record', produce).toString(), '{"id":"a"}', 'still answered')
  t.equal(cache.variant('href', produce)(old).toString(), '{"id":"a"}')
  t.equal(cache.bytes(old, 'record', produce).toString(), '{"id":"a"}')
  t.equal(calls, 3, 'made each time')
  t.equal(cache.size, held, 'and never kept')
  cache.bytes(current, 'record', produce)
  t.equal(calls, 3, 'the current record is still cached')
})

t.test('JsonCache following the bus holds one version of a record however often it changes, none once removed (issue 30)', async (t) => {
  const bus = new EventBus()
  const cache = new JsonCache(64 * 1024 * 1024)
  const stop = cache.follow(bus)
  const text = (record: object): string => JSON.stringify(record)
  const other = Object.freeze({ id: 'other', type: 'VM', name_label: 'stays' })
  cache.bytes(other, 'record', text)
  let record: XoRecord = Object.freeze({ id: 'vm', type: 'VM', name_label: 'soak-0' })
  cache.bytes(record, 'record', text)
  for (let i = 1; i <= 1000; i++) {
    const previous = record
    record = Object.freeze({ id: 'vm', type: 'VM', name_label: `soak-${i}` })
    bus.publish({ kind: 'update', object: record, previous })
    // A delivery made after the change, as the event streams make theirs, asks for both versions.
    cache.bytes(previous, 'record', text)
    cache.bytes(record, 'record', text)
    cache.bytes(record, 'fields', () => '{"name_label":"x"}')
  }
  const fresh = new JsonCache(64 * 1024 * 1024)
  fresh.bytes(other, 'record', text)
  fresh.bytes(record, 'record', text)
  fresh.bytes(record, 'fields', () => '{"name_label":"x"}')
  t.equal(cache.size, fresh.size, 'what a cache of the two records as they are now holds: nothing of the 1,000 versions before')
  bus.publish({ kind: 'remove', object: record, previous: record })
  t.equal(cache.size, Buffer.byteLength(text(other)) + 'record'.length + 64, 'removed: only the other record left')
  stop()
  const after = Object.freeze({ id: 'other', type: 'VM', name_label: 'changed' })
  bus.publish({ kind: 'update', object: after, previous: other })
  t.equal(cache.size, Buffer.byteLength(text(other)) + 'record'.length + 64, 'no longer following: the replaced record waits for eviction')
})

t.test('ListingCache answers only for the version it was built at, and skips bodies over the entry bound', async (t) => {
  const listings = new ListingCache(1024 * 1024, 100)
  listings.set('k', '1', Buffer.from('[1]'))
  t.equal(listings.get('k', '1')?.toString(), '[1]')
  t.equal(listings.get('k', '2'), undefined)
  listings.set('big', '1', Buffer.alloc(101))
  t.equal(listings.get('big', '1'), undefined)
  t.equal(listings.get('q', '1'), undefined)
  listings.sent('q', 10)
  t.equal(listings.keeping('q'), undefined, 'a query asked once is not worth keeping')
  listings.get('q', '1')
  t.equal(listings.keeping('q'), 10, "a repeated one is, in a buffer of its last body's size")
  listings.get('huge', '1')
  listings.get('huge', '1')
  listings.sent('huge', 101)
  t.equal(listings.keeping('huge'), undefined, 'nor one whose last body was over the entry bound')
  t.equal(listings.current('q', '1'), undefined)
})

t.test('ListingCache keeps a body that would push out another only for a query asked more often', async (t) => {
  // Room for two bodies of 100 bytes, not three (each costs its key's length and 64 bytes more).
  const listings = new ListingCache(400, 1000)
  const ask = (key: string, times: number): void => {
    for (let i = 0; i < times; i++) listings.get(key, '1')
    listings.sent(key, 100)
  }
  const fill = (key: string): void => {
    const size = listings.keeping(key)
    if (size !== undefined) listings.set(key, '1', Buffer.alloc(size, key))
  }
  for (const key of ['["hot-one"]', '["hot-two"]']) {
    ask(key, 3)
    fill(key)
  }
  t.ok(listings.current('["hot-one"]', '1') && listings.current('["hot-two"]', '1'), 'both fit')
  // Queries asked twice each, one after the other (a script's queries asked again): none would be hit again.
  for (let i = 0; i < 20; i++) {
    const key = `["twice-${i}"]`
    ask(key, 2)
    t.equal(listings.keeping(key), undefined, `${key} would push out a body asked more often`)
  }
  t.ok(listings.current('["hot-one"]', '1') && listings.current('["hot-two"]', '1'), 'the bodies asked most stay')
  const rising = '["rising"]'
  ask(rising, 4)
  t.equal(listings.keeping(rising), 100, 'a query asked more often than the least recent body gets in')
})

t.test("ListingCache's counts age: a query asked often long ago gives way", async (t) => {
  const listings = new ListingCache(200, 1000)
  const ask = (key: string, times: number): void => {
    for (let i = 0; i < times; i++) listings.get(key, '1')
    listings.sent(key, 100)
  }
  ask('["old"]', 6)
  listings.set('["old"]', '1', Buffer.alloc(listings.keeping('["old"]') ?? 0))
  ask('["early"]', 4)
  t.equal(listings.keeping('["early"]'), undefined, 'asked less often than the body it would push out')
  // More asks than the counts' aging period (8 times the 4,096 queries remembered), of other queries.
  for (let i = 0; i < 8 * 4096; i++) listings.get(`["one-off-${i % 1000}"]`, '1')
  ask('["new"]', 4)
  t.equal(listings.keeping('["new"]'), 100, "the old query's count was halved: asked as often as the early one, the new one gets in")
})
