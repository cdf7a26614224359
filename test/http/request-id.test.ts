import t from 'tap'
import { nextRequestId } from '../../src/http/request-id.js'

t.test('request ids are UUID-shaped and count up by one, across the 4096-id blocks', (t) => {
  const ids = Array.from({ length: 3 * 4096 + 5 }, () => nextRequestId())
  const shape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
  const misshapen = ids.filter((id) => !shape.test(id))
  t.same(misshapen, [], 'every id has the shape')
  t.equal(new Set(ids.map((id) => id.slice(0, 24))).size, 1, 'one prefix per process')
  const counters = ids.map((id) => Number.parseInt(id.slice(24), 16))
  const gaps = counters.flatMap((value, i) => (i > 0 && value !== counters[i - 1]! + 1 ? [i] : []))
  t.same(gaps, [], 'each id counts one past the one before')
  t.end()
})
