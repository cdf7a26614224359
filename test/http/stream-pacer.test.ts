import t from 'tap'
import { StreamPacer } from '../../src/http/stream-pacer.js'

t.test('a stream with no API request answered beside it never waits', async (t) => {
  const pacer = new StreamPacer(5)
  const turn = pacer.follow()
  for (let chunk = 0; chunk < 3; chunk++) t.equal(turn(), undefined)
})

t.test('a stream waits once per chunk after which API requests were answered', async (t) => {
  const pacer = new StreamPacer(5)
  const turn = pacer.follow()
  pacer.answered()
  pacer.answered()
  const wait = turn()
  t.type(wait, Promise, 'requests since the previous chunk: a pause')
  await wait
  t.equal(turn(), undefined, 'the requests already waited for do not pause the next chunk')
  pacer.answered()
  t.type(turn(), Promise, 'a new request: a new pause')
})

t.test('each stream keeps its own view; a pause of 0 never waits', async (t) => {
  const pacer = new StreamPacer(5)
  const first = pacer.follow()
  pacer.answered()
  const second = pacer.follow()
  t.equal(second(), undefined, 'a stream started after the request has not seen API traffic beside it')
  t.type(first(), Promise)
  const off = new StreamPacer(0)
  const turn = off.follow()
  off.answered()
  t.equal(turn(), undefined)
})
