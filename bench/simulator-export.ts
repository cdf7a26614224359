// The XAPI simulator's own disk exports (issue 28): the CPU time a simulator spends on one `/export_raw_vdi`,
// raw and VHD, for this build and, when given, another (`node dist/bench/simulator-export.js [OTHER_ROOT]`,
// OTHER_ROOT holding its own dist/). Each build's simulator serves its own copy of one generated lab with the
// same VDI imported (half of its 2 MiB blocks random, half never written); rounds alternate the builds and the
// formats. The simulators run as the benchmark runs them (bench/xapi-driver.ts: no V8 flags, unpinned).
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { packageRoot } from '../src/paths.js'
import { download, expectTransfer, stop, writeRawFile } from './keel-client.js'
import { SimulatorClient } from './simulator-client.js'

const PASSWORD = 'bench-password'
const MiB = 1024 * 1024
const vms = Number(process.env['BENCH_SIMULATOR_EXPORT_VMS'] ?? 10000)
const vdiMib = Number(process.env['BENCH_SIMULATOR_EXPORT_MIB'] ?? 512)
const rounds = Number(process.env['BENCH_SIMULATOR_EXPORT_ROUNDS'] ?? 4)
/** V8 flags for the simulators, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` */
const flags = process.env['BENCH_SIMULATOR_EXPORT_FLAGS']?.split(' ').filter((flag) => flag !== '') ?? []

/** User and system CPU seconds a child has used so far (/proc/PID/stat, in clock ticks of 1/100 s). */
function cpuSeconds(child: ChildProcess): number {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** `root`'s simulator on `dataDir`; resolves with its child and URL. */
function simulator(root: string, dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...flags, join(root, 'dist/bench/serve-xapi.js'), dataDir, PASSWORD], { stdio: ['pipe', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let text = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk
      const end = text.indexOf('\n')
      if (end !== -1) resolve({ child, url: text.slice(0, end) })
    })
    child.once('exit', (code) => reject(new Error(`the simulator of ${root} exited with ${code}`)))
  })
}

const root = mkdtempSync(join(tmpdir(), 'keel-bench-simulator-export-'))
const children: ChildProcess[] = []
try {
  const labDir = join(root, 'lab')
  const cli = join(packageRoot, 'dist/src/cli/main.js')
  await new Promise<void>((resolve, reject) =>
    spawn(process.execPath, [cli, 'lab', 'generate', '--vms', String(vms), '--hosts', '16', '--data-dir', labDir], { stdio: 'inherit', env: { ...process.env, KEEL_ADMIN_PASSWORD: PASSWORD } }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`lab generate exited with ${code}`)),
    ),
  )
  const size = vdiMib * MiB
  const rawFile = join(root, 'disk.raw')
  writeRawFile(rawFile, size)
  const builds = [{ name: 'this build', root: packageRoot }, ...(process.argv[2] === undefined ? [] : [{ name: process.argv[2], root: process.argv[2] }])]
  const sides = []
  for (const [i, build] of builds.entries()) {
    const dataDir = join(root, `simulator-${i}`)
    cpSync(labDir, dataDir, { recursive: true })
    const started = await simulator(build.root, dataDir)
    children.push(started.child)
    const client = new SimulatorClient(started.url)
    await client.login(PASSWORD)
    const { ref } = await client.importVdi(rawFile, size)
    for (const format of ['raw', 'vhd'] as const) sides.push({ name: `${build.name}, ${format}`, url: client.exportUrl(ref, format), child: started.child })
  }
  const results = new Map<string, Array<{ seconds: number; cpu: number; bytes: number }>>()
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const before = cpuSeconds(side.child)
      const transfer = expectTransfer(side.name, await download(side.url, {}), 200)
      const result = { seconds: transfer.seconds, cpu: cpuSeconds(side.child) - before, bytes: transfer.bytes }
      results.set(side.name, [...(results.get(side.name) ?? []), result])
    }
  }
  const [load1, load5] = loadavg()
  const lines = [
    `${vdiMib} MiB VDI (half data) on a ${vms}-VM lab, ${rounds} alternating rounds, load average ${load1?.toFixed(1)} (1 min) ${load5?.toFixed(1)} (5 min) at the end; per export:`,
    '',
    '| export | bytes | simulator CPU s, each round | median | wall s, each round |',
    '|---|---|---|---|---|',
  ]
  for (const [name, runs] of results) {
    const list = (pick: (run: { seconds: number; cpu: number }) => number): string => runs.map((run) => pick(run).toFixed(2)).join(', ')
    const cpu = runs.map((run) => run.cpu).sort((a, b) => a - b)
    const median = ((cpu[Math.floor((cpu.length - 1) / 2)] ?? NaN) + (cpu[Math.ceil((cpu.length - 1) / 2)] ?? NaN)) / 2
    lines.push(`| ${name} | ${runs[0]?.bytes ?? 0} | ${list((run) => run.cpu)} | ${median.toFixed(2)} | ${list((run) => run.seconds)} |`)
  }
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  for (const child of children) await stop(child)
  rmSync(root, { recursive: true, force: true })
}
