// Issue 26: the service as it runs (`keel serve`), its stderr a pipe that nobody reads for ten
// seconds while requests arrive (test/helpers/stalled-service.ts).
import t from 'tap'
import { accountFor, entriesOf, MEMORY_BOUND, metric, reading, serve, stall, stop } from '../helpers/stalled-service.js'

t.test('a stalled stderr loses no line once it is read, and memory stays bounded meanwhile', async (t) => {
  const service = await serve(t.testdir())
  t.teardown(() => service.child.kill('SIGKILL'))
  const stderr = reading(service.child)
  // 3,000 lines of 2 KiB: 6 MiB, thirty times what the socket and this side's stream hold, within the 16 MiB bound.
  const { ids, rssBefore, rssMost } = await stall(service, stderr, 3000, 2048)
  stderr.resume()
  const { value: dropped, id } = await metric(service, 'keel_log_lines_dropped_total')
  t.equal(dropped, 0)
  t.equal(await stop(service), 0, 'a clean stop')
  const entries = entriesOf(stderr.text())
  t.same(accountFor(t, entries, [...ids, id]), { kept: ids.length + 1, dropped: 0 }, 'every line, in order')
  // Answering the requests alone moves it by megabytes (heap, node's read buffers): the bound is loose.
  t.ok(rssMost - rssBefore < MEMORY_BOUND, `memory grew by ${Math.round((rssMost - rssBefore) / 1024)} KiB while 6 MiB of log waited`)
})
