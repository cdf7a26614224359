// XAPI driver benchmark (issue 28): a generated lab (`keel lab generate`) served twice, by Keel on the
// lab driver and by the simulator, with Keel on the XAPI driver connected to the simulator. Measures
// listings and single reads of both Keels in the same run (interleaved), the connection to the pool
// (login to ready), the delay from a rename through XAPI to the event on Keel's event stream, and a
// raw VDI export through Keel against the simulator's own `/export_raw_vdi`, beside the same export through a bare
// Node relay (bench/serve-relay-bare.ts: the raw export piped, the VHD export decoded), the ceiling of any relay here.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'
import { Api, download, expectTransfer, runScript, startServer, stop, writeRawFile, type Transfer } from './keel-client.js'
import type { LoadRequest, LoadResult } from './load-child.js'
import { SimulatorClient } from './simulator-client.js'

export interface XapiDriverBenchOptions {
  readonly vms: number
  /** one pool: a generated lab of more than 16 hosts has several, and a XAPI connection serves one */
  readonly hosts: number
  readonly pin: boolean
  /** seconds per autocannon run */
  readonly duration: number
  readonly connections: number
  /** runs per side and route, interleaved; the best of each side is kept */
  readonly runs: number
  /** renames timed from the XAPI call to Keel's event */
  readonly renames: number
  /** size of the exported VDI, half of it data */
  readonly vdiMib: number
  /** exports per side, interleaved; the fastest of each side is kept */
  readonly exports: number
}

export const xapiDriverBenchOptions = (pin: boolean): XapiDriverBenchOptions => ({
  vms: Number(process.env['BENCH_XAPI_DRIVER_VMS'] ?? 10000),
  hosts: Number(process.env['BENCH_XAPI_DRIVER_HOSTS'] ?? 16),
  pin,
  duration: Number(process.env['BENCH_DURATION'] ?? 10),
  connections: Number(process.env['BENCH_CONNECTIONS'] ?? 50),
  runs: Number(process.env['BENCH_XAPI_DRIVER_RUNS'] ?? 4),
  renames: Number(process.env['BENCH_XAPI_DRIVER_RENAMES'] ?? 300),
  vdiMib: Number(process.env['BENCH_XAPI_DRIVER_VDI_MIB'] ?? 512),
  exports: Number(process.env['BENCH_XAPI_DRIVER_EXPORTS'] ?? 3),
})

const PASSWORD = 'bench-password'
const MiB = 1024 * 1024
const core = (pin: boolean, which: number): number | undefined => (pin ? which : undefined)

export async function generate(dataDir: string, vms: number, hosts: number): Promise<void> {
  const cli = join(packageRoot, 'dist/src/cli/main.js')
  const child = spawn(process.execPath, [cli, 'lab', 'generate', '--vms', String(vms), '--hosts', String(hosts), '--data-dir', dataDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, KEEL_ADMIN_PASSWORD: PASSWORD },
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`lab generate exited with ${code}`)
}

/**
 * The simulator, started again if it fails: each of its hosts listens on a loopback address of its own
 * (127.0.0.x) at the master's port, which another simulator on the shared machine may hold already.
 */
export async function startSimulator(dataDir: string): Promise<Awaited<ReturnType<typeof runScript>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runScript('serve-xapi.js', [dataDir, PASSWORD], { core: undefined, stderr: attempt < 3 ? 'ignore' : 'inherit' })
    } catch (error) {
      if (attempt === 3) throw error
    }
  }
}

/** Keel's event stream, subscribed to VM names: resolves a wait when an update carries the awaited name. */
class NameEvents {
  readonly #awaited = new Map<string, () => void>()
  readonly #controller = new AbortController()

  private constructor() {}

  static async open(api: Api): Promise<NameEvents> {
    const events = new NameEvents()
    const response = await fetch(`${api.url}/rest/v0/events`, { headers: api.headers, signal: events.#controller.signal })
    if (response.body === null) throw new Error('the event stream has no body')
    const connection = await events.#read(response.body)
    await api.expect('POST', `/rest/v0/events/${connection}/subscriptions`, 201, { collection: 'VM', fields: ['name_label'] })
    return events
  }

  /** Reads frames in the background; resolves with the connection id of the `init` event. */
  #read(body: ReadableStream<Uint8Array>): Promise<string> {
    return new Promise((resolve, reject) => {
      const decoder = new TextDecoder()
      let tail = ''
      void (async () => {
        for await (const chunk of body) {
          const frames = (tail + decoder.decode(chunk, { stream: true })).split('\n\n')
          tail = frames.pop() ?? ''
          for (const frame of frames) {
            const data = /^data: (.*)$/m.exec(frame)?.[1]
            if (data === undefined) continue
            const parsed = JSON.parse(data) as { id?: string; name_label?: string }
            if (frame.includes('event: init') && parsed.id !== undefined) resolve(parsed.id)
            if (parsed.name_label !== undefined) this.#awaited.get(parsed.name_label)?.()
          }
        }
      })().catch((error: unknown) => {
        if (!this.#controller.signal.aborted) reject(error instanceof Error ? error : new Error(String(error)))
      })
    })
  }

  /** Registers the wait before the change is sent, so an event that comes first is not missed. */
  next(name: string): Promise<void> {
    return new Promise((resolve) => this.#awaited.set(name, () => (this.#awaited.delete(name), resolve())))
  }

  close(): void {
    this.#controller.abort()
  }
}

/** User and system CPU seconds a child has used so far (/proc/PID/stat, in clock ticks of 1/100 s). */
function cpuSeconds(child: ChildProcess): number {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? NaN

async function load(options: XapiDriverBenchOptions, url: string, headers: Record<string, string>): Promise<LoadResult> {
  const request: LoadRequest = { url, headers, connections: options.connections, warmup: Math.min(3, options.duration), duration: options.duration, uniquePaths: false }
  const { line } = await runScript('load-child.js', [JSON.stringify(request)], { core: core(options.pin, 1), stderr: 'inherit' })
  return JSON.parse(line) as LoadResult
}

/** `runs` rounds of `sides`, every other round in reverse order; the best of each side (by `better`), in the order given. */
async function interleaved<T>(runs: number, sides: ReadonlyArray<() => Promise<T>>, better: (a: T, b: T) => boolean): Promise<T[]> {
  const kept: Array<T | undefined> = sides.map(() => undefined)
  for (let run = 0; run < runs; run++) {
    const order = sides.map((_, i) => i)
    for (const i of run % 2 === 0 ? order : order.reverse()) {
      const result = await sides[i]!()
      const previous = kept[i]
      if (previous === undefined || better(result, previous)) kept[i] = result
    }
  }
  return kept.map((result) => {
    if (result === undefined) throw new Error('at least one run per side')
    return result
  })
}

export async function xapiDriverBench(options: XapiDriverBenchOptions): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'keel-bench-xapi-driver-'))
  const children: ChildProcess[] = []
  try {
    const labDir = join(root, 'lab')
    const simulatorDir = join(root, 'simulator')
    const xapiKeelDir = join(root, 'keel-xapi')
    await generate(labDir, options.vms, options.hosts)
    // The same lab twice, copied before either is opened: the two servers must not share a directory.
    cpSync(labDir, simulatorDir, { recursive: true })
    mkdirSync(xapiKeelDir)

    // Keels on core 0, the load generator on core 1, the simulator on neither: pinned beside the load generator, it was
    // starved during the listings until Keel's calls timed out and the pool was lost.
    const simulator = await startSimulator(simulatorDir)
    children.push(simulator.child)
    const simulatorUrl = simulator.line
    const labKeel = await startServer('serve-keel.js', [labDir], options.pin, 'ignore')
    children.push(labKeel.child)
    const xapiKeel = await runScript('serve-keel-xapi.js', [xapiKeelDir, simulatorUrl, PASSWORD], {
      core: core(options.pin, 0),
      stderr: 'ignore',
      nodeFlags: SERVICE_NODE_FLAGS,
      env: SERVICE_ENV,
    })
    children.push(xapiKeel.child)
    // Started and pinned as the XAPI Keel is; idle until the exports.
    const bare = await runScript('serve-relay-bare.js', [simulatorUrl], { core: core(options.pin, 0), stderr: 'inherit', nodeFlags: SERVICE_NODE_FLAGS, env: SERVICE_ENV })
    children.push(bare.child)
    const [xapiUrl, connectMs] = xapiKeel.line.split(' ')
    if (xapiUrl === undefined || connectMs === undefined) throw new Error(`serve-keel-xapi printed ${xapiKeel.line}`)
    const lab = await Api.login(labKeel.url)
    const xapi = await Api.login(xapiUrl)

    // Reads: the same paths on both Keels.
    const [running] = await lab.expect<Array<{ id: string }>>('GET', '/rest/v0/vms?fields=id&filter=power_state:Running&limit=1', 200)
    if (running === undefined) throw new Error('no running VM in the generated lab')
    const reads = [
      { name: `list ${options.vms} VMs' running ones, 3 fields`, path: '/rest/v0/vms?fields=name_label,power_state,$container&filter=power_state:Running' },
      { name: 'one VM, every field', path: `/rest/v0/vms/${running.id}` },
    ]
    const readRows: string[] = []
    for (const read of reads) {
      const sizes = await Promise.all([xapi, lab].map(async (api) => (await (await fetch(api.url + read.path, { headers: api.headers })).arrayBuffer()).byteLength))
      const [onXapi, onLab] = await interleaved(options.runs, [() => load(options, xapi.url + read.path, { ...xapi.headers }), () => load(options, lab.url + read.path, { ...lab.headers })], (a, b) => a.requests > b.requests)
      if (onXapi === undefined || onLab === undefined) throw new Error('no result')
      readRows.push(
        `| ${read.name} (${sizes[0]} / ${sizes[1]} B of JSON) | ${onXapi.requests.toFixed(0)} req/s, p99 ${onXapi.p99.toFixed(2)} ms | ${onLab.requests.toFixed(0)} req/s, p99 ${onLab.p99.toFixed(2)} ms | **${(onXapi.requests / onLab.requests).toFixed(2)}** | ≥ 0.9 against Keel on the lab driver | ${onXapi.errors + onLab.errors} |`,
      )
    }

    // Change to event: each rename sent through a session of its own, the next one once Keel's event for it arrived.
    const client = new SimulatorClient(simulatorUrl)
    await client.login(PASSWORD)
    const vmRef = await client.call<string>('VM.get_by_uuid', [running.id])
    const events = await NameEvents.open(xapi)
    const delays: number[] = []
    try {
      for (let i = 0; i < options.renames; i++) {
        const name = `bench rename ${i}`
        const arrived = events.next(name)
        const started = performance.now()
        await client.call('VM.set_name_label', [vmRef, name])
        await arrived
        delays.push(performance.now() - started)
      }
    } finally {
      events.close()
    }
    delays.sort((a, b) => a - b)

    // Raw export: a new VDI on the pool's default SR, half of its 2 MiB blocks random and half never written.
    const size = options.vdiMib * MiB
    const rawFile = join(root, 'disk.raw')
    writeRawFile(rawFile, size)
    const { ref: vdiRef, uuid: vdiUuid } = await client.importVdi(rawFile, size)
    // The index has the VDI once its event came; a bench may poll for it.
    while ((await fetch(`${xapi.url}/rest/v0/vdis/${vdiUuid}`, { headers: xapi.headers })).status !== 200) await new Promise((resolve) => setTimeout(resolve, 50))
    const direct = client.exportUrl(vdiRef, 'raw')
    // Each export with the CPU time the relay (Keel or the bare one) and the simulator spent on it: on a loaded machine the times move a lot, the CPU much less.
    const timed = async (url: string, headers: Readonly<Record<string, string>>, relay: ChildProcess): Promise<Transfer & { readonly relayCpu: number; readonly simulatorCpu: number }> => {
      const before = [cpuSeconds(relay), cpuSeconds(simulator.child)]
      const transfer = await download(url, headers)
      return { ...transfer, relayCpu: cpuSeconds(relay) - (before[0] ?? NaN), simulatorCpu: cpuSeconds(simulator.child) - (before[1] ?? NaN) }
    }
    const [throughKeel, fromSimulator, asVhd, throughBare, decodedBare] = await interleaved(
      options.exports,
      [
        () => timed(`${xapi.url}/rest/v0/vdis/${vdiUuid}.raw`, xapi.headers, xapiKeel.child),
        () => timed(direct, {}, xapiKeel.child),
        () => timed(client.exportUrl(vdiRef, 'vhd'), {}, xapiKeel.child),
        () => timed(`${bare.line}/pipe${new URL(direct).search}`, {}, bare.child),
        () => timed(`${bare.line}/decode${new URL(client.exportUrl(vdiRef, 'vhd')).search}`, {}, bare.child),
      ],
      (a, b) => a.seconds < b.seconds,
    )
    if (throughKeel === undefined || fromSimulator === undefined || asVhd === undefined || throughBare === undefined || decodedBare === undefined) throw new Error('no result')
    expectTransfer('export through Keel', throughKeel, 200, size)
    expectTransfer('export from the simulator', fromSimulator, 200, size)
    expectTransfer('VHD export from the simulator', asVhd, 200)
    expectTransfer('export through the bare relay', throughBare, 200, size)
    expectTransfer('VHD export decoded by the bare relay', decodedBare, 200, size)
    const cpu = (measured: { readonly relayCpu: number; readonly simulatorCpu: number }, relay = 'Keel'): string =>
      `CPU: ${relay} ${measured.relayCpu.toFixed(2)} s, simulator ${measured.simulatorCpu.toFixed(2)} s`
    const rate = (transfer: Transfer): number => options.vdiMib / transfer.seconds

    const [load1, load5] = loadavg()
    return [
      `XAPI driver against the lab driver, a generated ${options.vms}-VM lab (one pool of ${options.hosts} hosts), ${options.connections} connections, ${options.duration} s per run, best of ${options.runs} interleaved runs per side, pinned: ${options.pin}, load average ${load1?.toFixed(1)} (1 min) ${load5?.toFixed(1)} (5 min) at the end:\n`,
      '| measure | Keel on the XAPI driver | baseline | ratio | bar | errors |',
      '|---|---|---|---|---|---|',
      ...readRows,
      `| connect to the ${options.vms}-VM pool, login to ready | ${(Number(connectMs) / 1000).toFixed(2)} s | | | | |`,
      `| rename through XAPI to Keel's SSE event, ${delays.length} renames one after another | p50 ${percentile(delays, 0.5).toFixed(1)} ms, p99 ${percentile(delays, 0.99).toFixed(1)} ms, max ${(delays.at(-1) ?? NaN).toFixed(1)} ms | | | | |`,
      `| raw VDI export, ${options.vdiMib} MiB (half data), fastest of ${options.exports} | ${rate(throughKeel).toFixed(0)} MiB/s (${cpu(throughKeel)}) | ${rate(fromSimulator).toFixed(0)} MiB/s, the simulator's \`/export_raw_vdi\` (${cpu(fromSimulator)}) | **${(rate(throughKeel) / rate(fromSimulator)).toFixed(2)}** | ≥ 0.8 | |`,
      `| the same VDI from the simulator as VHD (what Keel reads), against its raw export | ${rate(asVhd).toFixed(0)} MiB/s of disk (${cpu(asVhd)}) | ${rate(fromSimulator).toFixed(0)} MiB/s | ${(rate(asVhd) / rate(fromSimulator)).toFixed(2)} | | |`,
      `| the raw export piped by a bare Node relay pinned as Keel is (the ceiling; Keel / it: ${(rate(throughKeel) / rate(throughBare)).toFixed(2)}) | ${rate(throughBare).toFixed(0)} MiB/s (${cpu(throughBare, 'relay')}) | ${rate(fromSimulator).toFixed(0)} MiB/s | ${(rate(throughBare) / rate(fromSimulator)).toFixed(2)} | | |`,
      `| the VHD export decoded to raw by the same relay with Keel's decoder (Keel / it: ${(rate(throughKeel) / rate(decodedBare)).toFixed(2)}) | ${rate(decodedBare).toFixed(0)} MiB/s (${cpu(decodedBare, 'relay')}) | ${rate(fromSimulator).toFixed(0)} MiB/s | ${(rate(decodedBare) / rate(fromSimulator)).toFixed(2)} | | |`,
      '',
    ].join('\n')
  } finally {
    for (const child of children) await stop(child)
    rmSync(root, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(await xapiDriverBench(xapiDriverBenchOptions(spawnSync('taskset', ['-c', '0,1', 'true']).status === 0)))
}
