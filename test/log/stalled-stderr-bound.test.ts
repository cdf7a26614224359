// Issue 26: the service as it runs (`keel serve`), its stderr a pipe that nobody reads for ten
// seconds while requests arrive (test/helpers/stalled-service.ts).
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { accountFor, entriesOf, MEMORY_BOUND, metric, reading, serve, stall, stop } from '../helpers/stalled-service.js'

t.test('past its bound, a stalled log drops lines, counts them in /metrics and says so in order, and memory stays flat', async (t) => {
  const dir = t.testdir()
  const config = join(dir, 'keel.toml')
  writeFileSync(config, '[log]\nmaxBufferedBytes = 65536\n')
  const service = await serve(join(dir, 'data'), ['--config', config])
  t.teardown(() => service.child.kill('SIGKILL'))
  const stderr = reading(service.child)
  // 3,000 lines of 15 KiB: 44 MiB of log against a bound of 64 KiB, more than MEMORY_BOUND on its own.
  const { ids, rssBefore, rssMost } = await stall(service, stderr, 3000, 15 * 1024)
  stderr.resume()
  // The log has caught up once a request's own line comes through.
  for (;;) {
    const answer = await fetch(`${service.url}/healthz`)
    await answer.arrayBuffer()
    const id = answer.headers.get('x-request-id') ?? ''
    ids.push(id)
    await sleep(50)
    if (stderr.text().includes(`"reqId":"${id}"`)) break
  }
  const { value: dropped, id } = await metric(service, 'keel_log_lines_dropped_total')
  t.equal(await stop(service), 0, 'a clean stop')
  const entries = entriesOf(stderr.text())
  const counted = accountFor(t, entries, [...ids, id])
  t.ok(dropped > 2500, `most lines dropped (${dropped})`)
  t.equal(counted.dropped, dropped, 'the log says as many dropped as /metrics counts')
  t.ok(rssMost - rssBefore < MEMORY_BOUND, `memory grew by ${Math.round((rssMost - rssBefore) / 1024)} KiB while 44 MiB was logged`)
})
