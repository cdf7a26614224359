// Issue 26: a fatal error while the service's stderr is stalled (test/helpers/stalled-service.ts).
import t from 'tap'
import { accountFor, entriesOf, reading, serve, stall } from '../helpers/stalled-service.js'

// A bug that escapes every handler, on demand: a throw from a signal's listener is an uncaught exception.
const FAULT = `data:text/javascript,process.on('SIGUSR2', () => { throw new Error('a bug on demand') })`

t.test('a fatal error with the log stalled writes every line, its own last, once the reader reads within 5 s', async (t) => {
  const service = await serve(t.testdir(), [], ['--import', FAULT])
  t.teardown(() => service.child.kill('SIGKILL'))
  const stderr = reading(service.child)
  // 3,000 lines of 2 KiB: 6 MiB waiting in the service as the error comes.
  const { ids } = await stall(service, stderr, 3000, 2048)
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve))
  service.child.kill('SIGUSR2')
  stderr.resume()
  t.equal(await exited, 1, 'the process ends with status 1')
  const text = stderr.text()
  t.same(accountFor(t, entriesOf(text), ids), { kept: ids.length, dropped: 0 }, 'every request line, in order')
  const last = JSON.parse(text.trimEnd().split('\n').at(-1) ?? '{}') as { level?: number; msg?: string; err?: { message?: string } }
  t.match(last, { level: 60, msg: 'fatal error', err: { message: 'a bug on demand' } }, 'the fatal error’s line last')
})
