// Issue 26: the service as it runs (`keel serve`), its stderr a pipe that nobody reads for ten
// seconds while requests arrive.
import t, { type Test } from 'tap'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { packageRoot } from '../../src/paths.js'

const cli = join(packageRoot, 'dist/src/cli/main.js')
const PASSWORD = 'stalled-stderr-secret'
const STALL_MS = 10_000

interface Service {
  readonly child: ChildProcessWithoutNullStreams
  readonly url: string
}

async function serve(dataDir: string, args: readonly string[] = []): Promise<Service> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--data-dir', dataDir, ...args], {
    env: { PATH: process.env['PATH'] ?? '', KEEL_ADMIN_PASSWORD: PASSWORD },
  })
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`keel serve exited with ${code}`)))
  })
  return { child, url }
}

const rssOf = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024

interface Stall {
  /** request ids, in the order they were answered */
  readonly ids: string[]
  /** resident memory just before the stall and at its most during it */
  readonly rssBefore: number
  readonly rssMost: number
  /** memory outside V8's heap (buffers) as the stall ends, as /metrics said */
  readonly external: number
}

/**
 * Sends `count` requests one after another, each logging a line of about `lineBytes`, while the
 * service's stderr is not read, and lets the stall last at least STALL_MS.
 */
async function stall(service: Service, count: number, lineBytes: number): Promise<Stall> {
  const pid = service.child.pid ?? 0
  const started = Date.now()
  const rssBefore = rssOf(pid)
  let rssMost = rssBefore
  const sampler = setInterval(() => (rssMost = Math.max(rssMost, rssOf(pid))), 100)
  const target = `${service.url}/healthz?pad=${'x'.repeat(lineBytes - 250)}`
  const ids: string[] = []
  try {
    for (let n = 0; n < count; n++) {
      const answer = await fetch(target)
      await answer.arrayBuffer()
      if (answer.status !== 200) throw new Error(`healthz answered ${answer.status}`)
      ids.push(answer.headers.get('x-request-id') ?? '')
    }
    await sleep(Math.max(0, STALL_MS - (Date.now() - started)))
    const { value: external, id } = await metric(service, 'keel_process_memory_bytes{kind="external"}')
    ids.push(id)
    rssMost = Math.max(rssMost, rssOf(pid))
    return { ids, rssBefore, rssMost, external }
  } finally {
    clearInterval(sampler)
  }
}

/** stderr from now on, read as it comes. */
function reading(child: ChildProcessWithoutNullStreams): () => string {
  let text = ''
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()))
  return () => text
}

type Entry = { readonly reqId: string } | { readonly dropped: number }

/** The request lines and the lines saying how many were dropped, in the order written. */
function entriesOf(stderr: string): Entry[] {
  const entries: Entry[] = []
  for (const line of stderr.split('\n')) {
    if (line === '') continue
    const parsed = JSON.parse(line) as { msg?: string; reqId?: string; dropped?: number; level?: number }
    if (parsed.msg === 'request' && parsed.reqId !== undefined) entries.push({ reqId: parsed.reqId })
    else if (parsed.dropped !== undefined && parsed.level === 40 && parsed.msg?.startsWith('log lines dropped')) entries.push({ dropped: parsed.dropped })
  }
  return entries
}

/** Walks the log against the ids answered: each kept line is the next id, each drop line skips as many. */
function accountFor(t: Test, entries: readonly Entry[], ids: readonly string[]): { kept: number; dropped: number } {
  let next = 0
  let kept = 0
  let dropped = 0
  for (const entry of entries) {
    if ('dropped' in entry) {
      next += entry.dropped
      dropped += entry.dropped
    } else {
      if (entry.reqId !== ids[next]) {
        t.fail(`the line of ${entry.reqId} where ${ids[next]}'s was due (answer ${next})`)
        return { kept, dropped }
      }
      next++
      kept++
    }
  }
  t.equal(next, ids.length, 'every answered request has its line or is counted as dropped')
  return { kept, dropped }
}

async function metric(service: Service, name: string): Promise<{ value: number; id: string }> {
  const answer = await fetch(`${service.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from(`admin@admin.net:${PASSWORD}`).toString('base64')}` } })
  const text = await answer.text()
  const value = text.split('\n').find((line) => line.startsWith(`${name} `))?.slice(name.length + 1)
  if (answer.status !== 200 || value === undefined) throw new Error(`/metrics answered ${answer.status} without ${name}: ${text.slice(0, 200)}`)
  return { value: Number(value), id: answer.headers.get('x-request-id') ?? '' }
}

async function stop(service: Service): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve))
  service.child.kill('SIGTERM')
  return exited
}

t.test('a stalled stderr loses no line once it is read, and the log held meanwhile is what memory grew by', async (t) => {
  const service = await serve(t.testdir())
  t.teardown(() => service.child.kill('SIGKILL'))
  // 3,000 lines of 2 KiB: 6 MiB, many times what the pipe and this side's reading buffer hold, within the 16 MiB bound.
  const { ids, rssBefore, rssMost, external } = await stall(service, 3000, 2048)
  t.ok(external > 4 * 1024 * 1024, `the log waited in the service (${Math.round(external / 1024)} KiB of buffers)`)
  const stderr = reading(service.child)
  const { value: dropped, id } = await metric(service, 'keel_log_lines_dropped_total')
  t.equal(dropped, 0)
  t.equal(await stop(service), 0, 'a clean stop')
  const entries = entriesOf(stderr())
  t.same(accountFor(t, entries, [...ids, id]), { kept: ids.length + 1, dropped: 0 }, 'every line, in order')
  t.ok(rssMost - rssBefore < 48 * 1024 * 1024, `memory grew by ${Math.round((rssMost - rssBefore) / 1024)} KiB while 6 MiB of log waited`)
})

t.test('past its bound, a stalled log drops lines, counts them in /metrics and says so in order, and memory stays flat', async (t) => {
  const dir = t.testdir()
  const config = join(dir, 'keel.toml')
  writeFileSync(config, '[log]\nmaxBufferedBytes = 65536\n')
  const service = await serve(join(dir, 'data'), ['--config', config])
  t.teardown(() => service.child.kill('SIGKILL'))
  // 3,000 lines of 8 KiB: 24 MiB of log against a bound of 64 KiB.
  const { ids, rssBefore, rssMost, external } = await stall(service, 3000, 8192)
  t.ok(external < 4 * 1024 * 1024, `${Math.round(external / 1024)} KiB of buffers as the stall ends`)
  const stderr = reading(service.child)
  // The log has caught up once a request's own line comes through.
  for (;;) {
    const answer = await fetch(`${service.url}/healthz`)
    await answer.arrayBuffer()
    const id = answer.headers.get('x-request-id') ?? ''
    ids.push(id)
    await sleep(50)
    if (stderr().includes(`"reqId":"${id}"`)) break
  }
  const { value: dropped, id } = await metric(service, 'keel_log_lines_dropped_total')
  t.equal(await stop(service), 0, 'a clean stop')
  const entries = entriesOf(stderr())
  const counted = accountFor(t, entries, [...ids, id])
  t.ok(dropped > 2000, `most lines dropped (${dropped})`)
  t.equal(counted.dropped, dropped, 'the log says as many dropped as /metrics counts')
  t.ok(rssMost - rssBefore < 12 * 1024 * 1024, `memory grew by ${Math.round((rssMost - rssBefore) / 1024)} KiB while 24 MiB was logged`)
})
