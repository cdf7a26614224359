import t from 'tap'
import { StreamBudget, type Budgeted } from '../../src/http/stream-budget.js'

class Connection implements Budgeted {
  cutAt: number | undefined
  constructor(public backlog: number) {}
  undelivered(): number {
    return this.backlog
  }
  cut(undelivered: number): void {
    this.cutAt = undelivered
  }
}

t.test('past the bound, the largest backlogs are cut until the rest fits', async (t) => {
  const budget = new StreamBudget(100)
  const small = new Connection(10)
  const middle = new Connection(40)
  const large = new Connection(45)
  for (const connection of [small, middle, large]) budget.report(connection, connection.backlog)
  t.equal(budget.total, 95)
  t.equal(large.cutAt, undefined)
  middle.backlog = 70
  budget.report(middle, 70)
  t.equal(middle.cutAt, 70, 'the largest goes')
  t.equal(large.cutAt, undefined, 'the rest fits without it')
  t.equal(small.cutAt, undefined)
  t.equal(budget.total, 55)
})

t.test('reports gone stale are measured again before anyone is cut', async (t) => {
  const budget = new StreamBudget(100)
  const drained = new Connection(90)
  budget.report(drained, 90)
  drained.backlog = 0
  const growing = new Connection(50)
  budget.report(growing, 50)
  t.equal(drained.cutAt, undefined)
  t.equal(growing.cutAt, undefined)
  t.equal(budget.total, 50, 'the sum as measured')
  budget.forget(growing)
  t.equal(budget.total, 0)
})

t.test('once past the bound, connections are cut until the rest fits in 7/8 of it', async (t) => {
  const budget = new StreamBudget(100)
  const connections = Array.from({ length: 9 }, () => new Connection(11))
  for (const connection of connections) budget.report(connection, connection.backlog)
  const [growing, ...others] = connections as [Connection, ...Connection[]]
  growing.backlog = 13
  budget.report(growing, 13)
  t.equal(growing.cutAt, 13, 'the largest goes first')
  t.equal(others.filter((connection) => connection.cutAt === 11).length, 1, 'and one more, where the largest alone left 88')
  t.equal(budget.total, 77)
})
