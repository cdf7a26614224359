// Heap harness for the XAPI driver (issue 28): a generated lab served by Keel on the lab driver and by
// the simulator, with Keel on the XAPI driver connected to it; reports each Keel's heap once ready
// (before and after a full collection) and the young collections N single reads cost. Heap bytes and
// collection counts move little with the machine's load, requests per second do.
// `node dist/bench/xapi-heap.js [VMS [READS]]` (defaults 10000 and 20000); BENCH_HEAP_SNAPSHOTS=DIR writes
// each Keel's heap snapshot after the collection in DIR.
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'
import { Api, runScript, stop } from './keel-client.js'
import type { HeapFigures } from './serve-keel-heap.js'

const PASSWORD = 'bench-password'
const MiB = 1024 * 1024
const CONCURRENCY = 8
const [vms = 10000, reads = 20000] = process.argv.slice(2).map(Number)

async function generate(dataDir: string): Promise<void> {
  const cli = join(packageRoot, 'dist/src/cli/main.js')
  const child = spawn(process.execPath, [cli, 'lab', 'generate', '--vms', String(vms), '--hosts', '16', '--data-dir', dataDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, KEEL_ADMIN_PASSWORD: PASSWORD },
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`lab generate exited with ${code}`)
}

/** A Keel child answering `stats` and `gc` on stdin with its heap figures. */
class Keel {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    readonly readyMs: number,
    readonly lines: AsyncIterator<string>,
  ) {}

  static async start(args: readonly string[]): Promise<Keel> {
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, join(packageRoot, 'dist/bench/serve-keel-heap.js'), ...args], {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { ...process.env, ...SERVICE_ENV, KEEL_ADMIN_PASSWORD: PASSWORD },
    })
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
    const [url, ms] = (await next(lines)).split(' ')
    if (url === undefined || ms === undefined) throw new Error('serve-keel-heap printed no URL')
    return new Keel(child, url, Number(ms), lines)
  }

  async snapshot(file: string): Promise<void> {
    this.child.stdin!.write(`snapshot ${file}\n`)
    await next(this.lines)
  }

  async figures(command: 'stats' | 'gc'): Promise<HeapFigures> {
    this.child.stdin!.write(command + '\n')
    return JSON.parse(await next(this.lines)) as HeapFigures
  }
}

async function next(lines: AsyncIterator<string>): Promise<string> {
  const { value, done } = await lines.next()
  if (done === true) throw new Error('serve-keel-heap exited')
  return value as string
}

/** `count` GETs of `path`, CONCURRENCY at a time on keep-alive sockets; every answer must be 200. */
async function readMany(url: string, path: string, headers: Record<string, string>, count: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  let left = count
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(url + path, { agent, headers }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`GET ${path}: ${res.statusCode}`))
        res.resume().once('end', resolve)
      })
      req.once('error', reject).end()
    })
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await one()
    }),
  )
  agent.destroy()
}

const mib = (bytes: number): string => (bytes / MiB).toFixed(0)

const root = mkdtempSync(join(tmpdir(), 'keel-bench-xapi-heap-'))
const children: ChildProcess[] = []
try {
  const labDir = join(root, 'lab')
  const simulatorDir = join(root, 'simulator')
  const xapiDir = join(root, 'keel-xapi')
  await generate(labDir)
  cpSync(labDir, simulatorDir, { recursive: true })
  mkdirSync(xapiDir)
  const simulator = await runScript('serve-xapi.js', [simulatorDir, PASSWORD], { core: undefined, stderr: 'inherit' })
  children.push(simulator.child)
  const rows: string[] = []
  const sides: Array<[string, readonly string[]]> = [
    ['lab driver', ['lab', labDir]],
    ['XAPI driver', ['xapi', xapiDir, simulator.line, PASSWORD]],
  ]
  for (const [name, args] of sides) {
    const keel = await Keel.start(args)
    children.push(keel.child)
    const ready = await keel.figures('stats')
    const api = await Api.login(keel.url)
    const [vm] = await api.expect<Array<{ id: string }>>('GET', '/rest/v0/vms?fields=id&filter=power_state:Running&limit=1', 200)
    if (vm === undefined) throw new Error('no running VM')
    // Warm-up (the JSON cache, the route), then the counted reads on the heap as the connection left it.
    await readMany(keel.url, `/rest/v0/vms/${vm.id}`, { ...api.headers }, 2000)
    const before = await keel.figures('stats')
    await readMany(keel.url, `/rest/v0/vms/${vm.id}`, { ...api.headers }, reads)
    const after = await keel.figures('stats')
    const collected = await keel.figures('gc')
    const snapshots = process.env['BENCH_HEAP_SNAPSHOTS']
    if (snapshots !== undefined) await keel.snapshot(join(snapshots, `${args[0]}.heapsnapshot`))
    const scavenges = after.young.count - before.young.count
    const pause = after.young.ms - before.young.ms
    rows.push(
      `| ${name} | ${(keel.readyMs / 1000).toFixed(2)} s | ${mib(ready.used)} / ${mib(ready.total)} | ${mib(ready.oldSpace)} + ${mib(ready.largeObjectSpace)} | ${mib(collected.used)} / ${mib(collected.total)} | ${scavenges} | ${(pause / Math.max(1, scavenges)).toFixed(2)} ms | ${((pause * 1000) / reads).toFixed(1)} µs | ${(((after.cpuMs - before.cpuMs) * 1000) / reads).toFixed(0)} µs | ${after.full.count - before.full.count} |`,
    )
    await stop(keel.child)
  }
  const [load1] = loadavg()
  process.stdout.write(
    [
      `Heap of Keel on each driver, a generated ${vms}-VM lab (one pool of 16 hosts), ${reads} reads of one VM (${CONCURRENCY} at a time) once ready, then a full collection, load average ${load1?.toFixed(1)} at the end:\n`,
      '| Keel on the | login to ready | heap used / total when ready (MiB) | old + large-object space when ready (MiB) | after a full collection (MiB) | young collections in the reads | pause each | pause per read | CPU per read | full collections in the reads |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  )
} finally {
  for (const child of children) await stop(child)
  rmSync(root, { recursive: true, force: true })
}
