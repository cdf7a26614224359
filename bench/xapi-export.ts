// Raw VDI export through Keel on the XAPI driver against the simulator's own export (issue 28), small and
// alternating: one simulator on a generated lab, a Keel of this build and, when given, a Keel of another
// build (`node dist/bench/xapi-export.js [OTHER_ROOT]`, OTHER_ROOT holding its own dist/), both connected to
// it. Each round exports the same VDI through every Keel, through a bare Node relay (bench/serve-relay-bare.ts,
// started as the Keels are: the ceiling of any relay here, piped and decoded from VHD) and from the simulator
// directly (raw, then VHD), in an order that alternates; each export's wall time and the CPU time the relay
// (Keel or bare) and the simulator spent on it, then the ratios of the fastest exports and of the median CPU.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'
import { download, expectTransfer, stop, writeRawFile } from './keel-client.js'
import { SimulatorClient } from './simulator-client.js'

const PASSWORD = 'bench-password'
const MiB = 1024 * 1024
const vdiMib = Number(process.env['BENCH_XAPI_EXPORT_MIB'] ?? 512)
const rounds = Number(process.env['BENCH_XAPI_EXPORT_ROUNDS'] ?? 4)

interface Cpu {
  readonly user: number
  readonly system: number
}

/** A process's CPU seconds so far, in user space and in the kernel (its socket copies are the kernel's). */
function cpuOf(child: ChildProcess | undefined): Cpu {
  if (child === undefined) return { user: 0, system: 0 }
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
}

const spent = (before: Cpu, after: Cpu): Cpu => ({ user: after.user - before.user, system: after.system - before.system })

/** A node script of `root`'s build; resolves with its child and first line of output. */
function script(root: string, name: string, args: readonly string[], flags: readonly string[] = []): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, [...flags, join(root, 'dist/bench', name), ...args], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...SERVICE_ENV } })
  return new Promise((resolve, reject) => {
    let text = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk
      const end = text.indexOf('\n')
      if (end !== -1) resolve({ child, line: text.slice(0, end) })
    })
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)))
  })
}

const root = mkdtempSync(join(tmpdir(), 'keel-bench-xapi-export-'))
const children: ChildProcess[] = []
try {
  const labDir = join(root, 'lab')
  const cli = join(packageRoot, 'dist/src/cli/main.js')
  await new Promise<void>((resolve, reject) =>
    spawn(process.execPath, [cli, 'lab', 'generate', '--vms', '20', '--hosts', '2', '--data-dir', labDir], { stdio: 'inherit', env: { ...process.env, KEEL_ADMIN_PASSWORD: PASSWORD } }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`lab generate exited with ${code}`)),
    ),
  )
  const simulator = await script(packageRoot, 'serve-xapi.js', [labDir, PASSWORD])
  children.push(simulator.child)
  const simulatorUrl = simulator.line
  const builds = [{ name: 'this build', root: packageRoot }, ...(process.argv[2] === undefined ? [] : [{ name: process.argv[2], root: process.argv[2] }])]
  const keels = []
  for (const [i, build] of builds.entries()) {
    const dir = join(root, `keel-${i}`)
    mkdirSync(dir)
    const keel = await script(build.root, 'serve-keel-xapi.js', [dir, simulatorUrl, PASSWORD], SERVICE_NODE_FLAGS)
    children.push(keel.child)
    keels.push({ ...build, child: keel.child, url: keel.line.split(' ')[0] as string })
  }
  const bare = await script(packageRoot, 'serve-relay-bare.js', [simulatorUrl], SERVICE_NODE_FLAGS)
  children.push(bare.child)
  const auth = { authorization: `Basic ${Buffer.from(`admin@admin.net:${PASSWORD}`).toString('base64')}` }

  const client = new SimulatorClient(simulatorUrl)
  await client.login(PASSWORD)
  const size = vdiMib * MiB
  const rawFile = join(root, 'disk.raw')
  writeRawFile(rawFile, size)
  const { ref: vdiRef, uuid: vdiUuid } = await client.importVdi(rawFile, size)
  for (const keel of keels) while ((await fetch(`${keel.url}/rest/v0/vdis/${vdiUuid}`, { headers: auth })).status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))

  const direct = client.exportUrl(vdiRef, 'raw')
  const query = (format: 'raw' | 'vhd'): string => new URL(client.exportUrl(vdiRef, format)).search
  const sides = [
    ...keels.map((keel) => ({ name: `through Keel (${keel.name})`, url: `${keel.url}/rest/v0/vdis/${vdiUuid}.raw`, headers: auth, relay: keel.child, bytes: size })),
    { name: 'through the bare relay, raw piped', url: `${bare.line}/pipe${query('raw')}`, headers: {}, relay: bare.child, bytes: size },
    { name: 'through the bare relay, VHD decoded', url: `${bare.line}/decode${query('vhd')}`, headers: {}, relay: bare.child, bytes: size },
    { name: 'the simulator, raw', url: direct, headers: {}, relay: undefined, bytes: size },
    { name: 'the simulator, VHD', url: client.exportUrl(vdiRef, 'vhd'), headers: {}, relay: undefined, bytes: undefined },
  ]
  type Run = { readonly seconds: number; readonly relay: Cpu; readonly simulator: Cpu }
  const results = new Map<string, Run[]>()
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const before = { relay: cpuOf(side.relay), simulator: cpuOf(simulator.child) }
      const transfer = await download(side.url, side.headers)
      expectTransfer(side.name, transfer, 200, side.bytes)
      const result = { seconds: transfer.seconds, relay: spent(before.relay, cpuOf(side.relay)), simulator: spent(before.simulator, cpuOf(simulator.child)) }
      results.set(side.name, [...(results.get(side.name) ?? []), result])
    }
  }
  const [load1] = loadavg()
  const lines = [`${vdiMib} MiB VDI (half data), ${rounds} alternating rounds, load average ${load1?.toFixed(1)} at the end; per export: wall s, then CPU s as user + system`, '']
  lines.push('| export | wall time, each round | relay CPU (Keel or bare) | simulator CPU |', '|---|---|---|---|')
  const cpu = (used: Cpu): string => `${used.user.toFixed(2)}+${used.system.toFixed(2)}`
  for (const [name, runs] of results) {
    const list = (pick: (run: Run) => string): string => runs.map(pick).join(', ')
    lines.push(`| ${name} | ${list((run) => run.seconds.toFixed(2))} | ${list((run) => cpu(run.relay))} | ${list((run) => cpu(run.simulator))} |`)
  }
  // Rates from each side's fastest export (the least disturbed by the machine's load), CPU from its median export.
  const rate = (name: string): number => vdiMib / Math.min(...(results.get(name) ?? []).map((run) => run.seconds))
  const median = (name: string, pick: (run: Run) => Cpu): number => {
    const sorted = (results.get(name) ?? []).map((run) => pick(run).user + pick(run).system).sort((a, b) => a - b)
    return sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN
  }
  const simulatorRaw = rate('the simulator, raw')
  const barePiped = rate('through the bare relay, raw piped')
  lines.push('', '| export | fastest, MiB/s | / the simulator, raw | / the bare relay, raw piped | relay CPU s, median | simulator CPU s, median |', '|---|---|---|---|---|---|')
  for (const name of results.keys()) {
    const own = rate(name)
    lines.push(`| ${name} | ${own.toFixed(0)} | ${(own / simulatorRaw).toFixed(2)} | ${(own / barePiped).toFixed(2)} | ${median(name, (run) => run.relay).toFixed(2)} | ${median(name, (run) => run.simulator).toFixed(2)} |`)
  }
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  for (const child of children) await stop(child)
  rmSync(root, { recursive: true, force: true })
}
