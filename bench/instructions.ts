// `BENCH_ONLY=instructions node dist/bench/run.js`: the instructions one single-object read costs
// Keel's request handler, against the bare server's handler sent the same requests, counted by
// valgrind's callgrind. Counts do not move with the machine's load as req/s does (on 2026-11-25 the
// bare server's CPU time per request ranged 17–35 µs within minutes), so a change to the hot path
// shows here even when the HTTP table cannot tell it from noise. Skipped without valgrind.
import { spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { Api, runScript } from './keel-client.js'

export interface InstructionsOptions {
  readonly vms: number
  /** requests before counting starts, so that V8 has optimized the path */
  readonly warmup: number
  readonly measured: number
}

export const instructionsOptions = (): InstructionsOptions => ({
  vms: Number(process.env['BENCH_VMS'] ?? 10000),
  warmup: Number(process.env['BENCH_INSTRUCTIONS_WARMUP'] ?? 20000),
  measured: Number(process.env['BENCH_INSTRUCTIONS_MEASURED'] ?? 5000),
})

interface Counted {
  readonly child: ChildProcess
  readonly url: string
  readonly out: string
}

/** A bench/ server script under callgrind, counting nothing until told to; resolves with the URL it prints. */
async function underCallgrind(dir: string, name: string, script: string, args: readonly string[], service: boolean): Promise<Counted> {
  const out = join(dir, `${name}.callgrind`)
  const { child, line } = await runScript(script, args, {
    core: undefined,
    stderr: 'ignore',
    nodeFlags: [...(service ? SERVICE_NODE_FLAGS : []), '--perf-basic-prof'],
    env: service ? SERVICE_ENV : {},
    wrapper: ['valgrind', '--tool=callgrind', '--smc-check=all-non-file', '--instr-atstart=no', `--callgrind-out-file=${out}`],
  })
  return { child, url: line, out }
}

async function load(url: string, headers: Readonly<Record<string, string>>, amount: number): Promise<void> {
  const result = await autocannon({ url, headers, connections: 10, amount })
  if (result.non2xx + result.errors > 0) throw new Error(`${url}: ${result.non2xx} answers not 2xx, ${result.errors} errors`)
}

const control = (pid: number, ...args: string[]): void => {
  if (spawnSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore' }).status !== 0) throw new Error(`callgrind_control ${args.join(' ')} failed`)
}

/** Function names by code address, from the perf map node writes with --perf-basic-prof. */
function perfMap(pid: number): (address: number) => string | undefined {
  const entries = readFileSync(`/tmp/perf-${pid}.map`, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [start = '0', size = '0', ...name] = line.split(' ')
      return { start: Number.parseInt(start, 16), end: Number.parseInt(start, 16) + Number.parseInt(size, 16), name: name.join(' ') }
    })
  return (address) => entries.findLast((entry) => entry.start <= address && address < entry.end)?.name
}

/**
 * Instructions of each counted function, calls included, summed over its code objects (a function
 * V8 optimized again has several), by the name node gave its code.
 */
function inclusive(file: string, pid: number): Map<string, number> {
  const annotated = spawnSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { encoding: 'utf8', maxBuffer: 1 << 28 })
  if (annotated.status !== 0) throw new Error(`callgrind_annotate failed: ${annotated.stderr}`)
  const nameOf = perfMap(pid)
  const totals = new Map<string, number>()
  for (const line of annotated.stdout.split('\n')) {
    const found = /^\s*([\d,]+) \([\s\d.]+%\)\s+\?\?\?:0x([0-9a-f]+)/.exec(line)
    if (found === null) continue
    // `JS:*serve file:///…/server.js:110:19`: the tier mark and the position go, the function stays.
    const name = nameOf(Number.parseInt(found[2]!, 16))?.replace(/^JS:[*^+~]?/, '').replace(/:\d+:\d+$/, '')
    if (name !== undefined) totals.set(name, (totals.get(name) ?? 0) + Number(found[1]!.replaceAll(',', '')))
  }
  return totals
}

/** Counts `measured` requests of `path` after `warmup` uncounted ones; the counts per request of the functions named. */
async function count(server: Counted, path: string, headers: Readonly<Record<string, string>>, options: InstructionsOptions, names: Readonly<Record<string, RegExp>>): Promise<Record<string, number>> {
  const pid = server.child.pid!
  await load(server.url + path, headers, options.warmup)
  control(pid, '-i', 'on')
  await load(server.url + path, headers, options.measured)
  control(pid, '-d')
  // The dump is written by the server's own thread: wait until it is there and whole.
  const dir = join(server.out, '..')
  const prefix = server.out.split('/').pop()!
  let dump: string | undefined
  for (let tries = 0; dump === undefined && tries < 600; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    dump = readdirSync(dir)
      .filter((file) => file.startsWith(prefix) && file !== prefix)
      .map((file) => join(dir, file))
      .find((file) => /^totals: /m.test(readFileSync(file, 'utf8')))
  }
  if (dump === undefined) throw new Error('callgrind wrote no dump')
  const totals = inclusive(dump, pid)
  server.child.kill('SIGTERM')
  rmSync(`/tmp/perf-${pid}.map`, { force: true })
  const perRequest: Record<string, number> = {}
  for (const [label, pattern] of Object.entries(names)) {
    const matching = [...totals].filter(([name]) => pattern.test(name))
    perRequest[label] = matching.reduce((sum, [, instructions]) => sum + instructions, 0) / options.measured
  }
  return perRequest
}

export async function instructionsBench(options: InstructionsOptions): Promise<string> {
  const tools = ['valgrind', 'callgrind_control', 'callgrind_annotate'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
  if (tools.length > 0) return `Instructions per request: skipped, ${tools.join(', ')} not installed (Debian package valgrind).\n`
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-instructions-'))
  const children: ChildProcess[] = []
  try {
    const keel = await underCallgrind(dir, 'keel', 'serve-keel.js', [join(dir, 'data'), String(options.vms), String(Math.max(3, Math.round(options.vms / 200)))], true)
    children.push(keel.child)
    const { headers } = await Api.login(keel.url)
    const [href] = (await (await fetch(`${keel.url}/rest/v0/vms?filter=power_state:Running&limit=1`, { headers })).json()) as string[]
    if (href === undefined) throw new Error('no running VM in the generated lab')
    const answer = await fetch(keel.url + href, { headers })
    const body = join(dir, 'body.bin')
    writeFileSync(body, Buffer.from(await answer.arrayBuffer()))
    const bare = await underCallgrind(dir, 'bare', 'serve-bare.js', [body, answer.headers.get('content-type') ?? '', answer.headers.get('x-request-id') ?? ''], false)
    children.push(bare.child)

    const keelCounts = await count(keel, href, headers, options, {
      whole: /^serve file:.*\/src\/http\/server\.js$/,
      authentication: /^authenticate file:.*\/src\/auth\/authenticate\.js$/,
      'log line and metrics': /^account file:.*\/src\/http\/server\.js$/,
    })
    const bareCounts = await count(bare, '/', headers, options, { whole: /^ file:.*\/bench\/serve-bare\.js$/ })
    const shown = (instructions: number | undefined): string => (instructions === undefined || instructions === 0 ? '—' : instructions.toFixed(0))
    const whole = keelCounts['whole'] ?? NaN
    const bareWhole = bareCounts['whole'] ?? NaN
    const rows = [
      `| the request handler, whole | ${shown(whole)} | ${shown(bareWhole)} | ${(whole / bareWhole).toFixed(2)} |`,
      `| … of which authentication | ${shown(keelCounts['authentication'])} | | |`,
      `| … of which the log line and metrics | ${shown(keelCounts['log line and metrics'])} | | |`,
    ]
    return (
      `Instructions per single-object read (callgrind, ${options.warmup} requests uncounted, then ${options.measured} counted, 10 connections, ${options.vms} VMs; ` +
      'parts are absent where V8 inlined them):\n\n| | Keel | bare | Keel / bare |\n|---|---|---|---|\n' +
      rows.join('\n') +
      '\n'
    )
  } finally {
    for (const child of children) child.kill('SIGTERM')
    rmSync(dir, { recursive: true, force: true })
  }
}
