// The soak run (issue 30; `npm run soak`, not part of `npm test` or `npm run bench`): Keel on a
// generated lab under a mixed load for a long time, its resident set and event-loop delay sampled
// throughout and drawn in an SVG beside bench/RESULTS.md. What it checks: no growth after the first
// minutes, and not one 5xx answer.
// The load, all at once: listings (a cached query and, one time in ten, a filter never asked
// before), single-object reads, a rename every 100 ms, VMs started and stopped, watchers on the event
// stream (their own process, as in the SSE benchmark) and disk exports (a 16 MiB range each).
// Sizes from the environment:
//   KEEL_SOAK_MINUTES   length of the run (30)
//   KEEL_SOAK_VMS       VMs of the generated lab (50000), on KEEL_SOAK_HOSTS hosts (1000)
//   KEEL_SOAK_WATCHERS  event-stream connections (1000)
//   KEEL_SOAK_OUT       folder for soak.svg and soak.csv (bench/ of the checkout)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { packageRoot } from '../src/paths.js'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { Api, runScript, stop } from './keel-client.js'
import type { ClientsRequest } from './sse-scale-clients.js'
import { soakChart, type Sample } from './soak-chart.js'

const number = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`)
  return value
}
const minutes = number('KEEL_SOAK_MINUTES', 30)
const vms = number('KEEL_SOAK_VMS', 50_000)
const hosts = number('KEEL_SOAK_HOSTS', 1000)
const watchers = number('KEEL_SOAK_WATCHERS', 1000)
const out = process.env['KEEL_SOAK_OUT'] ?? join(packageRoot, 'bench')
const SAMPLE_MS = 5000


/** Answers by kind of work: how many, and which statuses were not the expected ones. */
class Tally {
  readonly counts = new Map<string, number>()
  readonly unexpected = new Map<string, number>()
  serverErrors = 0
  total = 0

  /** `status` 599 is a request that got no answer; `why` says what the client saw. */
  record(kind: string, status: number, expected: readonly number[], why = ''): void {
    this.total++
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1)
    if (status >= 500) this.serverErrors++
    const key = `${kind} ${status}${why === '' ? '' : ` (${why})`}`
    if (!expected.includes(status)) this.unexpected.set(key, (this.unexpected.get(key) ?? 0) + 1)
  }
}

function rssMiB(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(line?.[1] ?? NaN) / 1024
}

function metric(text: string, name: string, label: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{${label}}`))
  return Number(line?.split(' ').pop() ?? NaN)
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T

/** Runs `step` again and again until `until` passes, pausing `pauseMs` between runs. */
async function loop(until: () => boolean, pauseMs: number, step: () => Promise<void>): Promise<void> {
  while (!until()) {
    await step()
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs))
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'keel-soak-'))
const tally = new Tally()
const samples: Sample[] = []
// Keel's warnings and errors go to the soak's stderr: a crash must say why.
const { child, line: url } = await runScript('serve-keel.js', [dataDir, String(vms), String(hosts)], {
  core: undefined,
  stderr: 'inherit',
  nodeFlags: SERVICE_NODE_FLAGS,
  env: { ...SERVICE_ENV, BENCH_LOG_LEVEL: 'warn' },
})
const keel = { child, url }
let exited: string | undefined
child.once('exit', (code, signal) => (exited = `Keel exited (${signal ?? `code ${code}`})`))
try {
  const api = await Api.login(keel.url)
  const pid = keel.child.pid as number
  const ids = async (path: string): Promise<string[]> => (await api.expect<Array<{ id: string }>>('GET', path, 200)).map(({ id }) => id)
  const vmIds = await ids('/rest/v0/vms?fields=id&limit=5000')
  const halted = await ids('/rest/v0/vms?fields=id&filter=power_state:Halted&limit=20')
  const vdis = await ids('/rest/v0/vdis?fields=id&limit=50')
  const hostIds = await ids('/rest/v0/hosts?fields=id')

  const request = async (kind: string, path: string, expected: readonly number[], init: RequestInit = {}): Promise<void> => {
    try {
      const response = await fetch(keel.url + path, { ...init, headers: { ...api.headers, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...(init.headers as Record<string, string> | undefined) } })
      await response.arrayBuffer()
      tally.record(kind, response.status, expected)
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error
      tally.record(kind, 599, expected, cause instanceof Error ? ((cause as NodeJS.ErrnoException).code ?? cause.message) : String(cause))
    }
  }

  const clients = await runScript('sse-scale-clients.js', [JSON.stringify({ url: keel.url, cookies: [api.headers['cookie'] as string], connections: watchers, sampleEvery: 50 } satisfies ClientsRequest)], {
    core: undefined,
    stderr: 'inherit',
  })
  const started = performance.now()
  const end = started + minutes * 60_000
  const running = (): boolean => performance.now() >= end || exited !== undefined
  let filters = 0
  const work = [
    ...[0, 1].map(() =>
      loop(running, 0, () => {
        const fresh = Math.random() < 0.1 ? `%20!name_label:soak${filters++}` : ''
        return request('listing', `/rest/v0/vms?fields=name_label,power_state,$container&filter=power_state:Running${fresh}`, [200])
      }),
    ),
    ...[0, 1, 2, 3].map(() => loop(running, 0, () => request('read', Math.random() < 0.8 ? `/rest/v0/vms/${pick(vmIds)}` : `/rest/v0/hosts/${pick(hostIds)}`, [200]))),
    loop(running, 100, () => request('rename', `/rest/v0/vms/${pick(vmIds)}`, [204], { method: 'PATCH', body: JSON.stringify({ nameLabel: `soak-${Date.now()}` }) })),
    loop(running, 1000, async () => {
      const vm = pick(halted)
      await request('start', `/rest/v0/vms/${vm}/actions/start?sync=true`, [200, 204])
      await request('stop', `/rest/v0/vms/${vm}/actions/hard_shutdown?sync=true`, [200, 204])
    }),
    loop(running, 500, () => request('export', `/rest/v0/vdis/${pick(vdis)}.raw`, [206], { headers: { range: 'bytes=0-16777215' } })),
    loop(running, SAMPLE_MS, async () => {
      const text = await fetch(`${keel.url}/metrics`, { headers: api.headers }).then((response) => response.text(), () => '')
      // A scrape that got no answer leaves a gap rather than a made-up point.
      if (exited !== undefined || text === '') return
      samples.push({ minute: (performance.now() - started) / 60_000, rssMiB: rssMiB(pid), heapMiB: metric(text, 'keel_process_memory_bytes', 'kind="heap_used"') / 2 ** 20, loopP99Ms: metric(text, 'keel_event_loop_delay_seconds', 'stat="p99"') * 1000, requests: tally.total })
    }),
  ]
  await Promise.all(work)
  await stop(clients.child)
  if (exited !== undefined) process.stderr.write(`${exited} after ${((performance.now() - started) / 60_000).toFixed(1)} minutes\n`)

  writeFileSync(join(out, 'soak.svg'), soakChart(samples))
  writeFileSync(join(out, 'soak.csv'), 'minute,rss_mib,heap_used_mib,loop_p99_ms,requests\n' + samples.map((s) => `${s.minute.toFixed(2)},${s.rssMiB.toFixed(1)},${s.heapMiB.toFixed(1)},${s.loopP99Ms.toFixed(2)},${s.requests}`).join('\n') + '\n')
  // Growth is judged after the first minutes (the caches and the event log fill): the last third against minutes 2 to 5 (of a long run).
  const [from, to] = [Math.min(2, minutes / 3), Math.min(5, (2 * minutes) / 3)]
  const settled = samples.filter((s) => s.minute >= from && s.minute <= to)
  const lastThird = samples.filter((s) => s.minute >= (2 * minutes) / 3)
  const median = (values: number[]): number => values.sort((a, b) => a - b)[values.length >> 1] ?? NaN
  const growth = (value: (sample: Sample) => number): string => {
    const early = median(settled.map(value))
    const late = median(lastThird.map(value))
    return `${early.toFixed(0)} MiB; ${late.toFixed(0)} MiB (${(((late - early) / early) * 100).toFixed(1)}%)`
  }
  const lines = [
    `Soak: ${minutes} min on ${vms} VMs / ${hosts} hosts, ${watchers} watchers; samples every ${SAMPLE_MS / 1000} s in ${join(out, 'soak.csv')}, drawn in soak.svg`,
    '',
    '| measure | value |',
    '|---|---|',
    `| requests answered | ${tally.total} (${[...tally.counts].map(([kind, count]) => `${kind} ${count}`).join(', ')}) |`,
    `| 5xx answers (or failed connections) | ${tally.serverErrors} |`,
    `| Keel | ${exited ?? 'ran to the end'} |`,
    `| other unexpected statuses | ${tally.unexpected.size === 0 ? 'none' : [...tally.unexpected].map(([what, count]) => `${what}: ${count}`).join(', ')} |`,
    `| RSS, median of minutes ${from.toFixed(1)}–${to.toFixed(1)}; of the last third | ${growth((s) => s.rssMiB)} |`,
    `| V8 heap in use, the same | ${growth((s) => s.heapMiB)} |`,
    `| event-loop delay p99, median; worst 5 s | ${median(samples.map((s) => s.loopP99Ms)).toFixed(1)} ms; ${Math.max(...samples.map((s) => s.loopP99Ms)).toFixed(1)} ms |`,
  ]
  process.stdout.write(lines.join('\n') + '\n')
  if (tally.serverErrors > 0 || exited !== undefined) process.exitCode = 1
} finally {
  await stop(keel.child)
  rmSync(dataDir, { recursive: true, force: true })
}
