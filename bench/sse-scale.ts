// SSE scale benchmark (issue 30): many event-stream connections of many users, whose roles each
// let them read the VMs of one tag, while the lab renames VMs at a steady rate; then the same with
// connections that never read, under the bound of all streams together; against a bare node:http
// server writing frames of the same size to the same groups of sockets, in the same run. The
// server runs on core 0, the clients in a process of their own on core 1. Sizes from BENCH_SSE_*
// (below); changes are published on Keel's event bus as the driver publishes a commit, or made by
// the lab with BENCH_SSE_SOURCE=lab (a SQLite transaction each, which then sets the pace); the lab's data directory is on /dev/shm when there is one (BENCH_SSE_DATA_DIR to
// choose); BENCH_SSE_PROFILE=DIR writes the server's CPU profile there. Run alone with
// `node dist/bench/sse-scale.js`, or `BENCH_ONLY=sse-scale npm run bench`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'
import type { ClientsRequest } from './sse-scale-clients.js'

export interface SseScaleOptions {
  readonly connections: number
  readonly users: number
  readonly roles: number
  readonly vms: number
  /** VM changes a second */
  readonly rate: number
  readonly seconds: number
  /** connections that never read, in the second run */
  readonly stalled: number
  /** `maxRamAllocatedForSseClients`, MiB */
  readonly boundMiB: number
  /** where changes come from: the lab (a SQLite transaction each) or straight onto the event bus */
  readonly source: 'lab' | 'bus'

  readonly pin: boolean
}

export function sseScaleOptions(pin: boolean): SseScaleOptions {
  const env = (name: string, fallback: number): number => Number(process.env[`BENCH_SSE_${name}`] ?? fallback)
  return {
    connections: env('CONNECTIONS', 10_000),
    users: env('USERS', 1000),
    roles: env('ROLES', 100),
    vms: env('VMS', 1000),
    rate: env('RATE', 1000),
    seconds: env('SECONDS', 10),
    stalled: env('STALLED', 100),
    boundMiB: env('BOUND', 512),
    source: process.env['BENCH_SSE_SOURCE'] === 'lab' ? 'lab' : 'bus',
    pin,
  }
}

interface Child {
  readonly process: ChildProcess
  /** sends a command line (none when empty) and resolves with the rest of the first line starting with `reply` */
  ask(command: string, reply: string): Promise<string>
}

function start(script: string, args: readonly string[], core: number | undefined, service: boolean): Child {
  const node = [process.execPath, '--expose-gc', ...(service ? SERVICE_NODE_FLAGS : []), ...(service && process.env['BENCH_SSE_PROFILE'] !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_SSE_PROFILE']}`] : []), join(packageRoot, 'dist/bench', script), ...args]
  const [command, ...rest] = core === undefined ? node : ['taskset', '-c', String(core), ...node]
  const child = spawn(command as string, rest, { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...(service ? SERVICE_ENV : {}) } })
  const lines = createInterface({ input: child.stdout! })
  const early: string[] = []
  lines.on('line', (line) => early.push(line))
  const ask = (line: string, reply: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const found = early.findIndex((each) => each.startsWith(reply))
      if (found !== -1) {
        resolve((early.splice(found, 1)[0] as string).slice(reply.length).trim())
        return
      }
      const onLine = (answer: string): void => {
        if (!answer.startsWith(reply)) return
        lines.off('line', onLine)
        child.off('exit', onExit)
        early.splice(early.indexOf(answer), 1)
        resolve(answer.slice(reply.length).trim())
      }
      const onExit = (code: number | null): void => reject(new Error(`${script} exited with ${code}`))
      lines.on('line', onLine)
      child.once('exit', onExit)
      if (line !== '') child.stdin!.write(line + '\n')
    })
  return { process: child, ask }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

interface Run {
  readonly delivered: number
  readonly expected: number
  /** the rate the changes were made at: below the one asked when the server could not keep it */
  readonly changesPerSecond: number
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly cpuPerDelivery: number
}

/** One run of changes: deliveries counted until all expected arrived or the count stops moving for 3 s. */
async function measure(server: Child, clients: Child, options: SseScaleOptions, during?: () => Promise<void>): Promise<Run> {
  const expected = options.rate * options.seconds * Math.floor(options.connections / options.roles)
  await clients.ask('latency', 'latency')
  const before = Number(await clients.ask('count', 'count'))
  const cpuBefore = Number(await server.ask('cpu', 'cpu'))
  const started = performance.now()
  const applied = server.ask(`run ${options.rate} ${options.seconds} ${options.source}`, 'applied')
  let done: number | undefined
  void applied.then(() => (done = performance.now()))
  let delivered = 0
  let lastDelivery = started
  for (;;) {
    await during?.()
    const now = Number(await clients.ask('count', 'count')) - before
    if (now !== delivered) {
      delivered = now
      lastDelivery = performance.now()
    }
    // Once every change is made, what has not arrived 3 s after the last delivery never will.
    if (delivered >= expected || (done !== undefined && performance.now() - Math.max(lastDelivery, done) > 3000)) break
    await sleep(100)
  }
  const [appliedSeconds] = (await applied).split(' ').map(Number) as [number]
  const cpuAfter = Number(await server.ask('cpu', 'cpu'))
  const [p50, p99] = (await clients.ask('latency', 'latency')).split(' ').map(Number) as [number, number]
  return {
    delivered,
    expected,
    changesPerSecond: (options.rate * options.seconds) / appliedSeconds,
    perSecond: delivered / ((lastDelivery - started) / 1000),
    p50,
    p99,
    cpuPerDelivery: (cpuAfter - cpuBefore) / delivered,
  }
}

const metric = (text: string, pattern: RegExp): number => Number(pattern.exec(text)?.[1] ?? NaN)

export async function sseScaleBench(options: SseScaleOptions): Promise<string> {
  const { connections, users, roles, pin } = options
  const serverCore = pin ? 0 : undefined
  const clientCore = pin ? 1 : undefined
  // The lab commits each change in a SQLite transaction: on a shared disk its syncs, not the fan-out, set the pace.
  const dataDir = mkdtempSync(join(process.env['BENCH_SSE_DATA_DIR'] ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir()), 'keel-bench-sse-'))
  const children: ChildProcess[] = []
  const clientsOf = (url: string, cookies: readonly string[]): Child => {
    const request: ClientsRequest = { url, cookies, connections, sampleEvery: 10 }
    const clients = start('sse-scale-clients.js', [JSON.stringify(request)], clientCore, false)
    children.push(clients.process)
    return clients
  }
  try {
    const keel = start('serve-sse-scale.js', [dataDir, String(options.vms), String(users), String(roles), String(options.boundMiB)], serverCore, true)
    children.push(keel.process)
    const keelUrl = `http://${await keel.ask('', 'http://')}`
    const setup = JSON.parse(await keel.ask('', 'setup')) as { tokens: string[]; admin: string }
    const rssBefore = Number(await keel.ask('rss', 'rss'))
    const clients = clientsOf(keelUrl, setup.tokens.map((token) => `authenticationToken=${token}`))
    await clients.ask('', 'ready')
    await sleep(1000)
    const rssIdle = Number(await keel.ask('rss', 'rss'))
    const steady = await measure(keel, clients, options)

    await clients.ask(`stall ${options.stalled} ${setup.admin}`, 'stalled')
    let peakHeld = 0
    let peakRss = 0
    const scrape = async (): Promise<string> => (await fetch(`${keelUrl}/metrics`, { headers: { cookie: setup.admin } })).text()
    const slow = await measure(keel, clients, options, async () => {
      const text = await scrape()
      peakHeld = Math.max(peakHeld, metric(text, /^keel_stream_undelivered_bytes (\S+)$/m))
      peakRss = Math.max(peakRss, metric(text, /^keel_process_memory_bytes\{kind="rss"\} (\S+)$/m))
    })
    const after = await scrape()
    const cuts = (reason: string): number => metric(after, new RegExp(`^keel_stream_cuts_total\\{reason="${reason}"\\} (\\S+)$`, 'm')) || 0
    const audiences = metric(after, /^keel_event_audiences\{collection="VM"\} (\S+)$/m)
    for (const child of children.splice(0)) child.kill('SIGTERM')

    const bare = start('serve-sse-scale-bare.js', [String(roles)], serverCore, false)
    children.push(bare.process)
    const bareUrl = `http://${await bare.ask('', 'http://')}`
    const bareClients = clientsOf(bareUrl, ['none=1'])
    await bareClients.ask('', 'ready')
    const bareRun = await measure(bare, bareClients, options)

    const row = (name: string, run: Run): string =>
      `| ${name} | ${run.changesPerSecond.toFixed(0)} | ${run.delivered} / ${run.expected} | ${run.perSecond.toFixed(0)} | ${run.p50.toFixed(1)} | ${run.p99.toFixed(1)} | ${run.cpuPerDelivery.toFixed(2)} |`
    const MiB = 1024 * 1024
    return [
      `SSE scale: ${connections} event-stream connections of ${users} users (${roles} roles, each reading the VMs of one tag; ${audiences} VM audiences), each subscribed to VM name_label,power_state; ${options.rate} VM changes/s for ${options.seconds} s over ${options.vms} VMs, ${options.source === 'lab' ? 'made by the lab' : 'published on the event bus'}; clients in their own process; pinned: ${pin}`,
      '',
      '| run | changes/s made | deliveries / expected | deliveries/s | delay p50 ms | delay p99 ms | server µs CPU / delivery |',
      '|---|---|---|---|---|---|---|',
      row('Keel', steady),
      row(`Keel, with ${options.stalled} connections (whole records, administrator) that never read`, slow),
      row('bare sockets, one write per event', bareRun),
      '',
      `Keel / bare deliveries/s: ${(steady.perSecond / bareRun.perSecond).toFixed(2)} (${(slow.perSecond / bareRun.perSecond).toFixed(2)} with the stalled connections); ` +
        `server RSS per idle subscribed connection: ${((rssIdle - rssBefore) / connections / 1024).toFixed(1)} KiB (${(rssBefore / MiB).toFixed(0)} MiB before, ${(rssIdle / MiB).toFixed(0)} MiB with ${connections} connections); ` +
        `with the stalled connections: undelivered bytes at most ${(peakHeld / MiB).toFixed(1)} MiB against a bound of ${options.boundMiB} MiB, RSS at most ${(peakRss / MiB).toFixed(0)} MiB, ` +
        `${cuts('total')} connections cut by the bound of all, ${cuts('connection')} by their own`,
      '',
    ].join('\n')
  } finally {
    for (const child of children) child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const pin = spawnSync('taskset', ['-c', '0,1', 'true']).status === 0
  process.stdout.write(await sseScaleBench(sseScaleOptions(pin)))
}
