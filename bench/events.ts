// Event fan-out benchmark: N event-stream connections subscribed to VM with two fields while
// the lab applies M VM changes, against a bare node:http server writing frames of the same size
// to N sockets in the same run. Run alone with `node dist/bench/events.js`; `npm run bench` runs it last.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface, type Interface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'

interface Child {
  readonly process: ChildProcess
  readonly url: string
  /** sends a command line and resolves with the first reply line starting with `reply` */
  ask(command: string, reply: string): Promise<string>
}

function start(script: string, args: string[], pin: boolean): Promise<Child> {
  const service = script === 'serve-events.js'
  const flags = service ? SERVICE_NODE_FLAGS : []
  const node = [process.execPath, '--expose-gc', ...flags, join(packageRoot, 'dist/bench', script), ...args]
  const [command, ...rest] = pin ? ['taskset', '-c', '0', ...node] : node
  const child = spawn(command as string, rest, { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...(service ? SERVICE_ENV : {}) } })
  const lines: Interface = createInterface({ input: child.stdout! })
  const ask = (line: string, reply: string): Promise<string> =>
    new Promise((resolve) => {
      const onLine = (answer: string): void => {
        if (!answer.startsWith(reply)) return
        lines.off('line', onLine)
        resolve(answer.slice(reply.length).trim())
      }
      lines.on('line', onLine)
      if (line !== '') child.stdin!.write(line + '\n')
    })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))
    lines.once('line', (url) => resolve({ process: child, url, ask }))
  })
}

/** A client that counts `update` frames and samples latency from the stamp each frame carries. */
class Reader {
  deliveries = 0
  readonly socket: Socket
  readonly #latencies: number[] | undefined
  #tail = ''
  connectionId: Promise<string>

  constructor(url: string, headers: string, latencies: number[] | undefined) {
    const { hostname, port } = new URL(url)
    this.#latencies = latencies
    this.socket = connect(Number(port), hostname)
    this.socket.setEncoding('latin1')
    this.socket.write(`GET /rest/v0/events HTTP/1.1\r\nHost: ${hostname}\r\n${headers}\r\n`)
    this.connectionId = new Promise((resolve) => {
      const onData = (chunk: string): void => {
        const match = /"id":"([^"]*)"/.exec(chunk)
        if (match === null) return
        this.socket.off('data', onData)
        this.socket.on('data', (more: string) => this.#count(more))
        resolve(match[1] as string)
      }
      this.socket.on('data', onData)
    })
  }

  #count(chunk: string): void {
    const now = performance.timeOrigin + performance.now()
    const text = this.#tail + chunk
    let at = text.indexOf('event: update')
    let last = 0
    while (at !== -1) {
      this.deliveries++
      if (this.#latencies !== undefined) {
        const stamp = text.indexOf('"t', at)
        const end = text.indexOf('"', stamp + 2)
        if (stamp !== -1 && end !== -1) this.#latencies.push(now - Number(text.slice(stamp + 2, end)))
      }
      last = at + 13
      at = text.indexOf('event: update', last)
    }
    this.#tail = text.slice(Math.max(last, text.length - 12))
  }
}

async function inBatches<T>(items: readonly T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(work))
}

/** Waits until `expected` deliveries or until the count stops moving for 5 s; returns seconds taken. */
async function deliveries(readers: readonly Reader[], expected: number, since: number): Promise<{ seconds: number; delivered: number }> {
  let last = -1
  let lastChange = performance.now()
  let lastDelivery = since
  for (;;) {
    const delivered = readers.reduce((sum, reader) => sum + reader.deliveries, 0)
    if (delivered !== last) {
      last = delivered
      lastChange = lastDelivery = performance.now()
    }
    if (delivered >= expected || performance.now() - lastChange > 5000) return { seconds: (lastDelivery - since) / 1000, delivered }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN

interface Run {
  readonly delivered: number
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly cpuPerDelivery: number
}

async function measure(child: Child, readers: readonly Reader[], latencies: number[], expected: number, command: string): Promise<Run> {
  const cpuBefore = Number(await child.ask('cpu', 'cpu'))
  const started = performance.now()
  child.process.stdin!.write(command + '\n')
  const { seconds, delivered } = await deliveries(readers, expected, started)
  const cpuAfter = Number(await child.ask('cpu', 'cpu'))
  const sorted = latencies.sort((a, b) => a - b)
  return { delivered, perSecond: delivered / seconds, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), cpuPerDelivery: (cpuAfter - cpuBefore) / delivered }
}

export async function eventsBench(options: { connections: number; changes: number; vms: number; pin: boolean }): Promise<string> {
  const { connections, changes, pin } = options
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-events-'))
  const children: ChildProcess[] = []
  const sockets: Socket[] = []
  try {
    const keel = await start('serve-events.js', [dataDir, String(options.vms)], pin)
    children.push(keel.process)
    const auth = { authorization: 'Basic ' + Buffer.from('admin@admin.net:bench-password').toString('base64') }
    const created = await fetch(`${keel.url}/rest/v0/users/me/authentication_tokens`, { method: 'POST', headers: auth })
    const token = ((await created.json()) as { token: { id: string } }).token.id
    const cookie = `authenticationToken=${token}`

    const rssBefore = Number(await keel.ask('rss', 'rss'))
    const keelLatencies: number[] = []
    const readers = Array.from({ length: connections }, (_, i) => new Reader(keel.url, `Cookie: ${cookie}\r\n`, i % 10 === 0 ? keelLatencies : undefined))
    sockets.push(...readers.map((reader) => reader.socket))
    await inBatches(readers, 50, async (reader) => {
      const id = await reader.connectionId
      const response = await fetch(`${keel.url}/rest/v0/events/${id}/subscriptions`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ collection: 'VM', fields: ['name_label', 'power_state'] }),
      })
      if (response.status !== 201) throw new Error(`subscription failed: ${response.status}`)
      await response.arrayBuffer()
    })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const rssIdle = Number(await keel.ask('rss', 'rss'))
    const keelRun = await measure(keel, readers, keelLatencies, changes * connections, `apply ${changes}`)
    for (const socket of sockets.splice(0)) socket.destroy()
    keel.process.kill('SIGTERM')

    const frame = 'id: 1795388518461001\nevent: update\ndata: {"$subscription":"VM","name_label":"STAMP","power_state":"Running"}\n\n'
    const bare = await start('serve-sse-bare.js', [], pin)
    children.push(bare.process)
    const bareLatencies: number[] = []
    const bareReaders = Array.from({ length: connections }, (_, i) => new Reader(bare.url, '', i % 10 === 0 ? bareLatencies : undefined))
    sockets.push(...bareReaders.map((reader) => reader.socket))
    await Promise.all(bareReaders.map((reader) => reader.connectionId))
    const bareRun = await measure(bare, bareReaders, bareLatencies, changes * connections, `send ${changes} ${JSON.stringify(frame)}`)

    const row = (name: string, run: Run): string =>
      `| ${name} | ${run.delivered} | ${run.perSecond.toFixed(0)} | ${run.p50.toFixed(1)} | ${run.p99.toFixed(1)} | ${run.cpuPerDelivery.toFixed(2)} |`
    return [
      `Event fan-out: ${connections} connections subscribed to VM (fields name_label,power_state), ${changes} VM changes applied by the lab (${options.vms} VMs), pinned: ${pin}`,
      '',
      '| server | deliveries | deliveries/s | latency p50 ms | latency p99 ms | server µs CPU / delivery |',
      '|---|---|---|---|---|---|',
      row('Keel', keelRun),
      row('bare sockets, one write per event', bareRun),
      '',
      `Keel / bare deliveries/s: ${(keelRun.perSecond / bareRun.perSecond).toFixed(2)}; server RSS per idle subscribed connection: ${((rssIdle - rssBefore) / connections / 1024).toFixed(1)} KiB (${(rssBefore / 1048576).toFixed(0)} MiB before, ${(rssIdle / 1048576).toFixed(0)} MiB with ${connections} connections)`,
      '',
    ].join('\n')
  } finally {
    for (const socket of sockets) socket.destroy()
    for (const child of children) child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const pin = spawnSync('taskset', ['-c', '0', 'true']).status === 0
  process.stdout.write(
    await eventsBench({
      connections: Number(process.env['BENCH_EVENT_CONNECTIONS'] ?? 1000),
      changes: Number(process.env['BENCH_EVENT_CHANGES'] ?? 10000),
      vms: Number(process.env['BENCH_EVENT_VMS'] ?? 1000),
      pin,
    }),
  )
}
