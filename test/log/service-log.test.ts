import t from 'tap'
import { spawnSync } from 'node:child_process'

/** Runs `body` in a node process with `log`, the service log at `level`, and returns what it wrote to stderr. */
function stderrOf(level: string, body: string): string {
  const module = new URL('../../src/log.js', import.meta.url).href
  const script = `import { createServiceLog } from ${JSON.stringify(module)}\nconst log = createServiceLog(${JSON.stringify(level)}, 16 * 1024 * 1024)\n${body}\nawait log.flush()\n`
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`the log script failed: ${run.stderr}`)
  return run.stderr
}

const entry = (reqId: string, status = 200, aborted = false): string =>
  `log.request({ reqId: ${JSON.stringify(reqId)}, method: 'GET', url: '/rest/v0/vms?filter=name_label:"a\\\\b"', status: ${status}, ms: 1.5, aborted: ${aborted} })`

t.test('a request line is one JSON object in pino’s shape', (t) => {
  const lines = stderrOf('info', [entry('one'), entry('two', 499, true)].join('\n')).trim().split('\n')
  t.equal(lines.length, 2)
  const [first, second] = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
  t.match(first, { level: 30, time: Number, pid: Number, hostname: String, reqId: 'one', method: 'GET', url: '/rest/v0/vms?filter=name_label:"a\\b"', status: 200, ms: 1.5, msg: 'request' })
  t.notOk('aborted' in (first ?? {}), 'a finished request says nothing of aborting')
  t.match(second, { reqId: 'two', status: 499, aborted: true, msg: 'request' })
  t.end()
})

t.test('request lines follow the logger’s level as it changes', (t) => {
  const body = [entry('at info'), "log.log.level = 'warn'", entry('at warn'), "log.log.level = 'debug'", entry('at debug')].join('\n')
  const ids = stderrOf('info', body)
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { reqId: string }).reqId)
  t.same(ids, ['at info', 'at debug'])
  t.equal(stderrOf('error', entry('quiet')), '', 'a service started above info writes none')
  t.end()
})

t.test('each line names its own method and target, whichever came before it', (t) => {
  const line = (method: string, url: string | undefined): string =>
    `log.request({ reqId: 'r', method: ${JSON.stringify(method)}, url: ${url === undefined ? 'undefined' : JSON.stringify(url)}, status: 200, ms: 1, aborted: false })`
  const asked: Array<[string, string | undefined]> = [
    ['GET', '/rest/v0/vms/a'],
    ['GET', '/rest/v0/vms/a'],
    ['DELETE', '/rest/v0/vms/a'],
    ['GET', '/rest/v0/vms/"b"'],
    ['GET', undefined],
    ['GET', '/rest/v0/vms/a'],
  ]
  const lines = stderrOf('info', asked.map(([method, url]) => line(method, url)).join('\n')).trim().split('\n')
  t.same(
    lines.map((text) => {
      const { method, url } = JSON.parse(text) as { method: string; url?: string | null }
      return [method, url ?? undefined]
    }),
    asked,
  )
  t.end()
})
