import t from 'tap'
import { Deadlines } from '../../src/http/deadlines.js'

t.test('items come out by deadline, earliest first, whatever the order they went in', async (t) => {
  const deadlines = new Deadlines<string>()
  const order = [50, 10, 40, 10, 30, 20, 60, 0]
  for (const [i, at] of order.entries()) deadlines.add(at, `${at}:${i}`)
  t.equal(deadlines.next, 0)
  t.same(deadlines.takeUntil(-1), [], 'nothing due yet')
  const due = deadlines.takeUntil(30)
  t.same(due.map((item) => Number(item.split(':')[0])), [0, 10, 10, 20, 30])
  t.equal(deadlines.size, 3)
  t.equal(deadlines.next, 40)
  t.same(deadlines.takeUntil(Infinity).map((item) => item.split(':')[0]), ['40', '50', '60'])
  t.equal(deadlines.next, undefined)
})

t.test('a thousand random deadlines come out sorted', async (t) => {
  const deadlines = new Deadlines<number>()
  const values = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1009)
  for (const value of values) deadlines.add(value, value)
  t.same(deadlines.takeUntil(Infinity), [...values].sort((a, b) => a - b))
})
