import t from 'tap'
import { holdTickShape } from '../../src/http/tick-shape.js'

t.test('the server holds one of node’s tick objects, once', async (t) => {
  const held = holdTickShape()
  t.type(held, 'object', 'node reports its ticks to async hooks, so one is held')
  t.type((held as { callback?: unknown } | undefined)?.callback, 'function', 'what is held is a tick: its callback beside it')
  t.equal(holdTickShape(), held, 'a second server holds the same tick')
})
