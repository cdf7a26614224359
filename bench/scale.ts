// The scale section (issue 30): a generated lab of 50,000 VMs on 1,000 hosts, made with
// `keel lab generate` and served by `keel serve` as in service. Measures the generation and the
// start, the resident set, listings and a single read against a bare server sending the same
// bytes, writes while 50 connections list, and the pool dashboard.
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync, type WriteStream } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'
import { Api, runScript, startServer, stop } from './keel-client.js'
import type { LoadRequest, LoadResult } from './load-child.js'

export interface ScaleOptions {
  readonly vms: number
  readonly hosts: number
  readonly pin: boolean
  readonly duration: number
  readonly connections: number
}

export const scaleBenchOptions = (pin: boolean): ScaleOptions => ({
  vms: Number(process.env['BENCH_SCALE_VMS'] ?? 50_000),
  hosts: Number(process.env['BENCH_SCALE_HOSTS'] ?? 1000),
  pin,
  duration: Number(process.env['BENCH_DURATION'] ?? 10),
  connections: Number(process.env['BENCH_CONNECTIONS'] ?? 50),
})

const cli = join(packageRoot, 'dist/src/cli/main.js')
const env = { ...process.env, ...SERVICE_ENV, KEEL_ADMIN_PASSWORD: 'bench-password' }
const seconds = (ms: number): string => (ms / 1000).toFixed(1)
const mib = (bytes: number): string => (bytes / 1024 ** 2).toFixed(0)

function pinned(pin: boolean, core: number, command: readonly string[]): [string, string[]] {
  const [head, ...rest] = pin ? ['taskset', '-c', String(core), ...command] : command
  return [head as string, rest]
}

async function generate(dataDir: string, { vms, hosts, pin }: ScaleOptions): Promise<number> {
  const started = performance.now()
  const [command, args] = pinned(pin, 0, [process.execPath, cli, 'lab', 'generate', '--vms', String(vms), '--hosts', String(hosts), '--data-dir', dataDir])
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'], env })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`lab generate exited with ${code}`)
  return performance.now() - started
}

/**
 * Tracing Keel through the bench's phases: `BENCH_SCALE_KEEL_FLAGS` adds V8 flags to the Keel
 * process (`--trace-gc --trace-incremental-marking`, which V8 prints on stdout) and
 * `BENCH_SCALE_KEEL_LOG` names a file that gets Keel's stdout with a line at each phase's start,
 * in ms since Keel's spawn (V8's own lines count from the isolate's start, a few ms later).
 * With `--trace-gc-nvp` among the flags, the bench also prints Keel's full collections and bytes promoted
 * (young objects that survived into the old generation) per response in each row.
 */
const traceFlags = (process.env['BENCH_SCALE_KEEL_FLAGS'] ?? '').split(' ').filter((flag) => flag !== '')
const traceFile = process.env['BENCH_SCALE_KEEL_LOG']

const tracesCollections = traceFlags.includes('--trace-gc-nvp')

interface Collections {
  readonly full: number
  readonly promoted: number
}

/**
 * `keel serve` on the data directory: the child, its URL, the ms from spawn to its "listening" line, `mark` to note
 * a phase in the trace, and the collections V8 traced so far (with `--trace-gc-nvp`).
 */
async function serve(dataDir: string, pin: boolean): Promise<{ child: ChildProcess; url: string; ms: number; mark: (phase: string) => void; collections: () => Collections }> {
  const started = performance.now()
  const [command, args] = pinned(pin, 0, [process.execPath, ...SERVICE_NODE_FLAGS, ...traceFlags, cli, 'serve', '--data-dir', dataDir, '--port', '0'])
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'], env })
  const trace: WriteStream | undefined = traceFile === undefined ? undefined : createWriteStream(traceFile)
  if (trace !== undefined) child.once('exit', () => trace.end())
  let full = 0
  let promoted = 0
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`keel serve exited with ${code}`)))
    createInterface({ input: child.stdout! }).on('line', (line) => {
      trace?.write(line + '\n')
      if (line.includes(' gc=mc ')) full++
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0)
      const found = /listening on (\S+)/.exec(line)
      if (found?.[1] !== undefined) resolve(found[1])
    })
  })
  const mark = (phase: string): void => {
    trace?.write(`# bench ${(performance.now() - started).toFixed(0)} ms: ${phase}\n`)
  }
  return { child, url, ms: performance.now() - started, mark, collections: () => ({ full, promoted }) }
}

/** CPU time (user and system) a process has used, ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** CPU time a process's main thread has used, ms (schedstat: what it ran, whatever else the machine runs). */
function mainThreadCpuMs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6
}

/** VmRSS of a process, bytes. */
function rss(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(line?.[1] ?? NaN) * 1024
}

async function load(options: ScaleOptions, url: string, headers: Record<string, string>, extra: Partial<LoadRequest> = {}): Promise<LoadResult> {
  const request: LoadRequest = { url, headers, connections: options.connections, warmup: Math.min(3, options.duration), duration: options.duration, uniquePaths: false, ...extra }
  const { line } = await runScript('load-child.js', [JSON.stringify(request)], { core: options.pin ? 1 : undefined, stderr: 'inherit' })
  return JSON.parse(line) as LoadResult
}

/**
 * The new-filter listing's p99 read against what the bare server itself does at the same
 * concurrency: with every connection busy, a response waits for the others ahead of it, and
 * Little's law puts the mean time near connections / throughput, for either server.
 */
function newFilterP99(connections: number, keel: LoadResult, bare: LoadResult): string {
  const wait = (result: LoadResult): string => (result.requests > 0 ? ((connections / result.requests) * 1000).toFixed(0) : 'n/a')
  return (
    `A new filter each time, p99 at ${connections} connections: Keel ${keel.p99.toFixed(0)} ms, the bare server ${bare.p99.toFixed(0)} ms ` +
    `(connections / req/s: Keel ${wait(keel)} ms, bare ${wait(bare)} ms); the bar is Keel's p99 ≤ 300 ms.`
  )
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? NaN

/** Keel's event-loop delay since its previous scrape of /metrics, ms: p99 and max. */
async function loopDelay(api: Api): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${api.url}/metrics`, { headers: api.headers })).text()
  const stat = (name: string): number => Number(new RegExp(`^keel_event_loop_delay_seconds\\{stat="${name}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000
  return { p99: stat('p99'), max: stat('max') }
}

/**
 * A rename every 50 ms while `connections` clients list VMs: how many were answered, and how fast;
 * Keel's event-loop delay over the writes; and the CPU Keel's main thread used while each rename
 * was pending (what it waited behind, plus its own work), which a loaded machine does not stretch.
 */
async function writesUnderReads(
  options: ScaleOptions,
  api: Api,
  path: string,
  vmId: string,
  pid: number,
): Promise<{ sent: number; answered: number; p50: number; p99: number; max: number; cpuP50: number; cpuP99: number; listings: LoadResult; loop: { p99: number; max: number } }> {
  const reading = load(options, api.url + path, { ...api.headers })
  // The load child warms up first; the writes start with its measured run.
  await new Promise((resolve) => setTimeout(resolve, Math.min(3, options.duration) * 1000))
  // A scrape resets the delay histogram: the one after the writes covers them alone.
  await loopDelay(api)
  const times: number[] = []
  const cpu: number[] = []
  const pending: Array<Promise<void>> = []
  let sent = 0
  const end = performance.now() + options.duration * 1000
  while (performance.now() < end) {
    const started = performance.now()
    const cpuBefore = mainThreadCpuMs(pid)
    sent++
    pending.push(
      fetch(`${api.url}/rest/v0/vms/${vmId}`, { method: 'PATCH', headers: { ...api.headers, 'content-type': 'application/json' }, body: JSON.stringify({ nameLabel: `renamed-${sent}` }) }).then(async (response) => {
        await response.arrayBuffer()
        if (response.status === 204) {
          times.push(performance.now() - started)
          cpu.push(mainThreadCpuMs(pid) - cpuBefore)
        }
      }),
    )
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await Promise.allSettled(pending)
  const loop = await loopDelay(api)
  const listings = await reading
  times.sort((a, b) => a - b)
  cpu.sort((a, b) => a - b)
  return {
    sent,
    answered: times.length,
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    max: times[times.length - 1] ?? NaN,
    cpuP50: percentile(cpu, 0.5),
    cpuP99: percentile(cpu, 0.99),
    listings,
    loop,
  }
}

export async function scaleBench(options: ScaleOptions): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-scale-'))
  const children: ChildProcess[] = []
  const lines: string[] = [`Scale: ${options.vms} VMs on ${options.hosts} hosts (\`keel lab generate\`, then \`keel serve\`), ${options.connections} connections, ${options.duration} s per run, one run each:\n`]
  try {
    const generated = await generate(dataDir, options)
    const keel = await serve(dataDir, options.pin)
    children.push(keel.child)
    const pid = keel.child.pid as number
    const idle = rss(pid)
    const startCpu = cpuMs(pid)
    const api = await Api.login(keel.url)
    keel.mark('full listing (fields=*)')
    const fullCpuBefore = cpuMs(pid)
    const full = await fetch(`${keel.url}/rest/v0/vms?fields=*`, { headers: api.headers })
    const fullBytes = (await full.arrayBuffer()).byteLength
    const fullCpu = cpuMs(pid) - fullCpuBefore
    const listed = rss(pid)
    const pools = await api.expect<Array<{ id: string }>>('GET', '/rest/v0/pools?fields=id', 200)
    lines.push('| measure | value |', '|---|---|')
    lines.push(`| \`keel lab generate --vms ${options.vms} --hosts ${options.hosts}\` | ${seconds(generated)} s, ${pools.length} pools |`)
    lines.push(`| \`keel serve\`: spawn to listening; Keel's CPU until then | ${seconds(keel.ms)} s; ${seconds(startCpu)} s |`)
    lines.push(`| RSS after start; after one full listing (${mib(fullBytes)} MiB of JSON) | ${mib(idle)} MiB; ${mib(listed)} MiB |`)
    lines.push(`| Keel's CPU for that full listing | ${fullCpu.toFixed(0)} ms |\n`)

    const running = await api.expect<Array<{ id: string }>>('GET', '/rest/v0/vms?fields=id&filter=power_state:Running&limit=1', 200)
    const vmId = running[0]?.id
    if (vmId === undefined) throw new Error('no running VM')
    const listing = '/rest/v0/vms?fields=name_label,power_state,$container&filter=power_state:Running'
    const newFilter = 'same, a new filter each time (`!name_label:q<n>` added)'
    const cases = [
      { name: 'list running VMs, 3 fields (cached)', path: listing, extra: {} },
      { name: newFilter, path: listing, extra: { uniqueFilters: true } },
      { name: 'one VM', path: `/rest/v0/vms/${vmId}`, extra: {} },
      { name: 'pool dashboard', path: `/rest/v0/pools/${pools[0]?.id ?? ''}/dashboard`, extra: {} },
    ]
    let newFilterLine = ''
    const collectionsByRow: string[] = []
    // Keel's CPU per response, warm-up included: what a change to Keel's work shows whatever else the machine runs.
    lines.push('| route | Keel req/s | Keel p99 ms | bare req/s | bare p99 ms | Keel / bare | non-2xx or errors | Keel CPU µs / response |', '|---|---|---|---|---|---|---|---|')
    // `BENCH_SCALE_WRITES_ONLY=1`: only the writes under reads (issue 30's write fairness), to compare trees a run at a time.
    for (const item of process.env['BENCH_SCALE_WRITES_ONLY'] === '1' ? [] : cases) {
      const response = await fetch(keel.url + item.path, { headers: api.headers })
      const file = join(dataDir, 'body.bin')
      writeFileSync(file, Buffer.from(await response.arrayBuffer()))
      keel.mark(`Keel: ${item.name} (3 s warm-up, then measured)`)
      const cpuBefore = cpuMs(pid)
      const collectionsBefore = keel.collections()
      const keelResult = await load(options, keel.url + item.path, { ...api.headers }, item.extra)
      const cpuPerResponse = ((cpuMs(pid) - cpuBefore) * 1000) / keelResult.answered
      const collectionsAfter = keel.collections()
      collectionsByRow.push(
        `${item.name}: ${collectionsAfter.full - collectionsBefore.full}, ${((collectionsAfter.promoted - collectionsBefore.promoted) / keelResult.answered).toFixed(0)} B`,
      )
      keel.mark(`bare server: ${item.name}`)
      const startBare = (): ReturnType<typeof startServer> =>
        startServer('serve-bare.js', [file, response.headers.get('content-type') ?? 'application/json', response.headers.get('x-request-id') ?? ''], options.pin, 'inherit')
      const bare = await startBare()
      const bareResult = await load(options, bare.url + '/', { ...api.headers })
      await stop(bare.child)
      lines.push(
        `| ${item.name} | ${keelResult.requests.toFixed(0)} | ${keelResult.p99.toFixed(2)} | ${bareResult.requests.toFixed(0)} | ${bareResult.p99.toFixed(2)} | ${(keelResult.requests / bareResult.requests).toFixed(2)} | ${keelResult.errors + bareResult.errors} | ${cpuPerResponse.toFixed(0)} |`,
      )
      if (item.name === newFilter) {
        newFilterLine = newFilterP99(options.connections, keelResult, bareResult)
        // The same pair at fewer connections, where a response's time is its own work more than its wait in line.
        const few = Number(process.env['BENCH_SCALE_FILTER_CONNECTIONS'] ?? 10)
        keel.mark(`Keel: ${item.name}, ${few} connections`)
        // Its filters start far past the first run's: asked a second time, a query is no longer new (its body may be kept).
        const keelFew = await load(options, keel.url + item.path, { ...api.headers }, { ...item.extra, connections: few, firstUnique: 100_000_000 })
        const bareAgain = await startBare()
        const bareFew = await load(options, bareAgain.url + '/', { ...api.headers }, { connections: few })
        await stop(bareAgain.child)
        newFilterLine += '\n' + newFilterP99(few, keelFew, bareFew)
        // The first run's filters once more, each asked a second time: what the listing cache lets in.
        keel.mark(`Keel: ${item.name}, asked a second time, ${few} connections`)
        const cpuBeforeAgain = cpuMs(pid)
        const keelAgain = await load(options, keel.url + item.path, { ...api.headers }, { ...item.extra, connections: few })
        newFilterLine +=
          `\nThe ${options.connections}-connection run's filters asked a second time, ${few} connections: Keel ${keelAgain.requests.toFixed(0)} req/s, ` +
          `p99 ${keelAgain.p99.toFixed(0)} ms, ${(((cpuMs(pid) - cpuBeforeAgain) * 1000) / keelAgain.answered).toFixed(0)} µs of Keel's CPU a response.`
      }
    }
    if (newFilterLine !== '') lines.push('', newFilterLine)
    if (tracesCollections && collectionsByRow.length > 0) {
      lines.push('', `Keel's full collections, and bytes promoted a response, in each row, warm-up included (V8's --trace-gc-nvp): ${collectionsByRow.join('; ')}.`)
    }
    keel.mark('writes under reads')
    const fairness = await writesUnderReads(options, api, listing, vmId, pid)
    lines.push(
      '',
      `Writes under read saturation: a PATCH every 50 ms while ${options.connections} connections list running VMs (each rename makes the next listings uncached):`,
      `${fairness.answered} of ${fairness.sent} renames answered 204, p50 ${fairness.p50.toFixed(1)} ms, p99 ${fairness.p99.toFixed(1)} ms, max ${fairness.max.toFixed(1)} ms;`,
      `listings meanwhile ${fairness.listings.requests.toFixed(0)} req/s, p99 ${fairness.listings.p99.toFixed(1)} ms, ${fairness.listings.errors} answered 503 or failed;`,
      `Keel's event-loop delay over the writes (its /metrics): p99 ${fairness.loop.p99.toFixed(1)} ms, max ${fairness.loop.max.toFixed(1)} ms;`,
      `Keel's main-thread CPU while a rename was pending: p50 ${fairness.cpuP50.toFixed(1)} ms, p99 ${fairness.cpuP99.toFixed(1)} ms.`,
    )
    return lines.join('\n') + '\n'
  } finally {
    for (const child of children) await stop(child)
    rmSync(dataDir, { recursive: true, force: true })
  }
}
