// Keel's full collections per raw export over XAPI, over many fresh processes (issue 28): a Keel on the XAPI
// driver made no full (mark-compact) collection in a 512 MiB export, or ten and more, mostly in every export of
// its life. One simulator on a generated lab with one VDI, then, for each build given (this one first:
// `node dist/bench/xapi-gc-mode.js [OTHER_ROOT ...]`, each root holding its own dist/), fresh Keels on the XAPI
// driver with that build's V8 flags and environment plus `--trace-gc`, one at a time, the builds taking turns.
// Each Keel connects, rests, then exports the VDI raw a few times. Per build: how many processes were slow (an
// export with SLOW full collections or more), the full collections and Keel's CPU per export of each, its RSS at rest.
// BENCH_XAPI_GC_PROCESSES per build (10), BENCH_XAPI_GC_EXPORTS per process (3), BENCH_XAPI_GC_VMS (20) and
// BENCH_XAPI_GC_HOSTS (2; one pool holds at most 16), BENCH_XAPI_GC_MIB (512), BENCH_XAPI_GC_REST seconds
// between the connection and the first export (10: V8's memory reducer acts on a process at rest after 8 s),
// BENCH_XAPI_GC_FLAGS more V8 flags for every Keel, BENCH_XAPI_GC_TRACES a directory to keep each Keel's output in.
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, type WriteStream } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { packageRoot } from '../src/paths.js'
import { cpuTimes, download, expectTransfer, stop, writeRawFile } from './keel-client.js'
import { SimulatorClient } from './simulator-client.js'
import { generate, startSimulator } from './xapi-driver.js'

const PASSWORD = 'bench-password'
const MiB = 1024 * 1024
const processes = Number(process.env['BENCH_XAPI_GC_PROCESSES'] ?? 10)
const exportsEach = Number(process.env['BENCH_XAPI_GC_EXPORTS'] ?? 3)
const vms = Number(process.env['BENCH_XAPI_GC_VMS'] ?? 20)
const hosts = Number(process.env['BENCH_XAPI_GC_HOSTS'] ?? 2)
const vdiMib = Number(process.env['BENCH_XAPI_GC_MIB'] ?? 512)
const restSeconds = Number(process.env['BENCH_XAPI_GC_REST'] ?? 10)
const extraFlags = (process.env['BENCH_XAPI_GC_FLAGS'] ?? '').split(' ').filter((flag) => flag !== '')
const tracesDir = process.env['BENCH_XAPI_GC_TRACES']

interface Build {
  readonly name: string
  readonly root: string
  readonly flags: readonly string[]
  readonly env: Readonly<Record<string, string>>
}

interface ProcessResult {
  readonly rssMib: number
  /** full collections in each export */
  readonly full: readonly number[]
  /** Keel's user + system CPU seconds in each export */
  readonly cpu: readonly number[]
}

/** A build's service flags and environment, from its own dist/ (they are what is compared). */
async function build(root: string, name: string): Promise<Build> {
  const flags = (await import(pathToFileURL(join(root, 'dist/src/cli/node-flags.js')).href)) as { SERVICE_NODE_FLAGS: readonly string[]; SERVICE_ENV: Readonly<Record<string, string>> }
  return { name, root, flags: flags.SERVICE_NODE_FLAGS, env: flags.SERVICE_ENV }
}

/** A Keel's trace lines as they come: its URL line, and a running count of its full collections. */
class Keel {
  fullCollections = 0
  readonly url: Promise<string>

  constructor(
    readonly child: ChildProcess,
    trace: WriteStream | undefined,
  ) {
    this.url = new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`serve-keel-xapi exited with ${code}`)))
      const lines = createInterface({ input: child.stdout! })
      lines.once('close', () => trace?.end())
      lines.on('line', (line) => {
        trace?.write(line + '\n')
        // `--trace-gc` prints `Mark-Compact` (`Mark-Compact (reduce)` from the memory reducer), `--trace-gc-nvp` `gc=mc`.
        if (line.includes(' Mark-Compact ') || line.includes(' gc=mc ')) this.fullCollections++
        else if (line.startsWith('http://')) resolve(line.split(' ')[0] as string)
      })
    })
  }
}

const rssMib = (child: ChildProcess): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024
const cpuSeconds = (child: ChildProcess): number => {
  const { user, system } = cpuTimes(child)
  return user + system
}
/** full collections in one export that mark a slow process: a fast one makes none, or one for the connection's garbage */
const SLOW = 4
const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN

const root = mkdtempSync(join(tmpdir(), 'keel-bench-xapi-gc-'))
const children: ChildProcess[] = []
try {
  const builds = [await build(packageRoot, 'this build'), ...(await Promise.all(process.argv.slice(2).map((other) => build(resolve(other), other))))]
  const labDir = join(root, 'lab')
  await generate(labDir, vms, hosts)
  const simulator = await startSimulator(labDir)
  children.push(simulator.child)
  const client = new SimulatorClient(simulator.line)
  await client.login(PASSWORD)
  const size = vdiMib * MiB
  const rawFile = join(root, 'disk.raw')
  writeRawFile(rawFile, size)
  const { uuid: vdiUuid } = await client.importVdi(rawFile, size)
  rmSync(rawFile)
  const headers = { authorization: `Basic ${Buffer.from(`admin@admin.net:${PASSWORD}`).toString('base64')}` }
  if (tracesDir !== undefined) mkdirSync(tracesDir, { recursive: true })

  const results = new Map<Build, ProcessResult[]>(builds.map((b) => [b, []]))
  for (let round = 0; round < processes; round++) {
    for (const [index, current] of (round % 2 === 0 ? builds : [...builds].reverse()).entries()) {
      const dir = join(root, `keel-${round}-${index}`)
      mkdirSync(dir)
      const args = [...current.flags, '--trace-gc', ...extraFlags, join(current.root, 'dist/bench/serve-keel-xapi.js'), dir, simulator.line, PASSWORD]
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, ...current.env } })
      children.push(child)
      const trace = tracesDir === undefined ? undefined : createWriteStream(join(tracesDir, `${builds.indexOf(current)}-${round}.txt`))
      const keel = new Keel(child, trace)
      try {
        const url = await keel.url
        // The index has the VDI once connected; at rest the way a service waits for its next export.
        await sleep(restSeconds * 1000)
        const rss = rssMib(child)
        const full: number[] = []
        const cpu: number[] = []
        for (let i = 0; i < exportsEach; i++) {
          const before = { full: keel.fullCollections, cpu: cpuSeconds(child) }
          expectTransfer('export through Keel', await download(`${url}/rest/v0/vdis/${vdiUuid}.raw`, headers), 200, size)
          // The trace lines of a collection that ended with the export are in the pipe by now, read at the next turn.
          await sleep(50)
          full.push(keel.fullCollections - before.full)
          cpu.push(cpuSeconds(child) - before.cpu)
        }
        results.get(current)?.push({ rssMib: rss, full, cpu })
      } finally {
        await stop(child)
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }

  const [load1] = loadavg()
  const lines = [
    `${vms} VMs, ${vdiMib} MiB VDI (half data), ${processes} fresh Keels per build taking turns, ${restSeconds} s at rest, then ${exportsEach} raw exports each; load average ${load1?.toFixed(1)} at the end`,
    '',
    `| build | slow processes (${SLOW} full collections or more in an export) | full collections in each export, by process | Keel CPU s per export (user + system), median of each process | median of those, slow / fast processes | RSS at rest, MiB: median (range) |`,
    '|---|---|---|---|---|---|',
  ]
  for (const [current, runs] of results) {
    const slow = runs.filter((run) => run.full.some((count) => count >= SLOW))
    const fast = runs.filter((run) => !slow.includes(run))
    const cpus = (of: readonly ProcessResult[]): string => (of.length === 0 ? '–' : median(of.map((run) => median(run.cpu))).toFixed(2))
    const rss = runs.map((run) => run.rssMib)
    lines.push(
      `| ${current.name} | ${slow.length} of ${runs.length} | ${runs.map((run) => run.full.join('/')).join(', ')} | ${runs.map((run) => median(run.cpu).toFixed(2)).join(', ')} | ${cpus(slow)} / ${cpus(fast)} | ${median(rss).toFixed(0)} (${Math.min(...rss).toFixed(0)}–${Math.max(...rss).toFixed(0)}) |`,
    )
  }
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  for (const child of children) await stop(child)
  rmSync(root, { recursive: true, force: true })
}
