// Backup benchmark: a full backup job of several VMs to a local repository (one XVA per VM), then a
// delta job (a full VHD per disk, then, after a share of the written blocks changed, differencing
// VHDs). Throughput is compared with a plain copy (`cp`, then each copied file synced, as Keel syncs
// what it writes) of the repository's own bytes in the same run; the delta run is compared with the
// delta job's first run by time and size. The API's latency (one VM read sent every 10 ms, each
// timed from when it was due) is measured idle and during the full job: the job's per-byte work (XVA
// framing, chunk checksums, the archive's MD5) runs in the worker pool, so the event loop keeps
// answering. The full job's row is followed by the service's CPU during it (all its threads, the
// reads measured beside it included) per GiB stored, against the copy's: on a loaded machine the CPU
// time says more than the wall time. Before the jobs, a synced copy of the lab's disks fills the page
// cache, so that the job and its `cp` take their memory the same way (see the comment there).
// Keel and cp run unpinned: the point is that the per-byte work leaves the event loop for the
// worker threads, which pinning the whole service to one core (as the other benchmarks do) would
// deny them, while cp is one thread either way. Where taskset works, the full job runs once more at
// the end with every thread of Keel, and cp, on core 0: the figures the earlier runs gave.
// Run alone with `node dist/bench/backups.js` after a build; `npm run bench` runs it after the disks.
// Sizes come from the environment (defaults: the size):
//   BENCH_BACKUP_VMS      VMs backed up (10)
//   BENCH_BACKUP_MIB      MiB of written data per VM: half the blocks of a disk twice that size (1024)
//   BENCH_BACKUP_CHANGE   percent of the written blocks changed before the delta run (5)
import { spawn, spawnSync } from 'node:child_process'
import { randomFillSync } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BLOCK_SIZE, blockCount } from '../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../src/formats/vhd/stream-encoder.js'
import { Api, cpuTimes, createVm, expectTransfer, secondsSince, startServer, stop, upload, writeRawFile, type Created } from './keel-client.js'
import { followThreads, type ThreadRole } from './thread-stats.js'

export interface BackupsBenchOptions {
  readonly vms: number
  /** written data per VM: every other 2 MiB block of a disk of twice this size */
  readonly dataMiB: number
  readonly changePercent: number
  /** the full job once more at the end with Keel (every thread) and the copy on core 0 */
  readonly pin: boolean
}

const MiB = 1024 * 1024
const LAB_VMS = 10
const LAB_HOSTS = 2

/** The memory no page cache or process holds, bytes (`MemFree`). */
function freeMemory(): number {
  return Number(/^MemFree:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? NaN) * 1024
}

/** Apparent bytes of every file under a folder. */
function bytesUnder(folder: string): number {
  let total = 0
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name)
    total += entry.isDirectory() ? bytesUnder(path) : statSync(path).size
  }
  return total
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint()
  await work()
  return secondsSince(started)
}

interface Cpu {
  readonly user: number
  readonly system: number
}

/**
 * The plain copy the backup is compared with: the same files, each synced to disk. Resolves with
 * its time and the CPU of the copy and the syncs (the shell's `times`: its children's user and
 * system seconds).
 */
function copy(from: string, to: string, pin: boolean): Promise<{ seconds: number; cpu: Cpu }> {
  const script = 'cp -r --sparse=never "$0" "$1" && find "$1" -type f -exec sync {} + && times'
  const command = pin ? ['taskset', '-c', '0', 'sh', '-c', script, from, to] : ['sh', '-c', script, from, to]
  const started = process.hrtime.bigint()
  return new Promise((resolve, reject) => {
    const child = spawn(command[0] as string, command.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text))
    child.once('error', reject)
    child.once('exit', (code) => {
      const seconds = secondsSince(started)
      // The second line of `times`: the children's user and system time, as `0m0.340000s 0m1.020000s`.
      const children = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/m.exec(output.split('\n')[1] ?? '')
      if (code !== 0 || children === null) reject(new Error(`copy exited with ${code}: ${output}`))
      else resolve({ seconds, cpu: { user: Number(children[1]) * 60 + Number(children[2]), system: Number(children[3]) * 60 + Number(children[4]) } })
    })
  })
}

/** A differencing VHD changing every `step`-th written block (written blocks are the even ones) with new random data. */
async function changePatch(vdi: string, size: number, step: number): Promise<Buffer> {
  const changed: number[] = []
  for (let index = 0; index < blockCount(size); index += 2 * step) changed.push(index)
  async function* blocks(): AsyncGenerator<{ index: number; data: Buffer }> {
    for (const index of changed) yield { index, data: randomFillSync(Buffer.alloc(BLOCK_SIZE)) }
  }
  const chunks: Buffer[] = []
  for await (const chunk of encodeVhdStream(planVhdStream({ size, allocated: changed, uuid: vdi, parent: { uuid: vdi, timestamp: 0, name: `${vdi}.vhd` }, now: 0 }), blocks())) chunks.push(chunk)
  return Buffer.concat(chunks)
}

const PROBE_INTERVAL_MS = 10

/** One VM read, its time counted from `due`, when it was meant to start. */
async function timedRead(url: string, headers: Readonly<Record<string, string>>, due: bigint): Promise<number> {
  const response = await fetch(url, { headers })
  await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status}`)
  return Number(process.hrtime.bigint() - due) / 1e6
}

/**
 * A latency probe, not a load: one VM read sent every PROBE_INTERVAL_MS, whether the ones before
 * have been answered or not, `count` of them or until `until` settles. Each is timed from when it
 * was due, so a stalled service (or a late probe) is counted in every read it held back (no
 * coordinated omission). Reads sent back to back, as before, were a second load on the cores the
 * job is measured on (22,713 in a 32 s job: about a third of a core in the service and as much in
 * this client); one at a time on a schedule, they fell behind it for good once the loaded service
 * took more than the interval to answer.
 */
async function latencies(url: string, headers: Readonly<Record<string, string>>, until: { count: number } | { done: Promise<unknown> }): Promise<number[]> {
  // The first fetch of a process loads its client (100-300 ms here): not a latency of the service.
  await timedRead(url, headers, process.hrtime.bigint())
  let stopped = false
  if ('done' in until) void until.done.finally(() => (stopped = true))
  const reads: Array<Promise<number>> = []
  const start = process.hrtime.bigint()
  for (let i = 0; 'done' in until ? !stopped : i < until.count; i++) {
    const due = start + BigInt(i * PROBE_INTERVAL_MS * 1e6)
    const early = Number(due - process.hrtime.bigint()) / 1e6
    if (early > 0) await sleep(early)
    if (stopped) break
    const read = timedRead(url, headers, due)
    // Awaited below with the others; a failure meanwhile is not an unhandled rejection.
    read.catch(() => undefined)
    reads.push(read)
  }
  return Promise.all(reads)
}

const p99 = (times: readonly number[]): number => [...times].sort((a, b) => a - b)[Math.min(times.length - 1, Math.floor(times.length * 0.99))] ?? NaN

interface Row {
  readonly name: string
  readonly keel: string
  readonly baseline: string
  /** none where the two columns are not the same measure */
  readonly ratio?: number
}

const rate = (bytes: number, seconds: number): string => `${(bytes / MiB / seconds).toFixed(0)} MiB/s`
const mib = (bytes: number): string => `${(bytes / MiB).toFixed(0)} MiB`

export async function backupsBench(options: BackupsBenchOptions): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'keel-bench-backups-'))
  const size = 2 * options.dataMiB * MiB
  try {
    const server = await startServer('serve-keel.js', [join(work, 'data'), String(LAB_VMS), String(LAB_HOSTS), '0'], false, 'ignore')
    try {
      const api = await Api.login(server.url)
      const raw = join(work, 'disk.raw')
      writeRawFile(raw, size)
      const vms: Array<{ vm: string; vdi: string }> = []
      for (let i = 0; i < options.vms; i++) {
        const created = await createVm(api, `backup bench ${i}`, size)
        expectTransfer(`PUT ${created.vdi}.raw`, await upload(`${server.url}/rest/v0/vdis/${created.vdi}.raw`, api.headers, raw, size), 204)
        vms.push(created)
      }
      rmSync(raw)
      // Inside the service's default repository root, the only place it accepts a repository.
      const repositoryDir = join(work, 'data', 'backups', 'repository')
      mkdirSync(repositoryDir, { recursive: true })
      const { id: repository } = await api.expect<Created>('POST', '/rest/v0/backup-repositories', 201, { name: 'bench', url: pathToFileURL(repositoryDir).href })
      const job = (mode: 'full' | 'delta'): Promise<Created> =>
        api.expect<Created>('POST', '/rest/v0/backup-jobs', 201, { name: `bench ${mode}`, mode, vms: { id: { __or: vms.map(({ vm }) => vm) } }, remotes: { id: repository }, settings: { '': { concurrency: 2 } } })
      const run = (id: string): Promise<number> =>
        timed(async () => {
          try {
            await api.expect('POST', `/rest/v0/backup-jobs/${id}/actions/run?sync=true`, 204)
          } catch (error) {
            // Which VMs failed and why is in the run's log.
            const logs = await api.expect<Array<{ jobId: string; tasks?: Array<{ status: string; data?: { id?: string }; result?: unknown }> }>>('GET', '/rest/v0/backup-logs?fields=jobId,tasks', 200)
            const failed = logs.filter((log) => log.jobId === id).flatMap((log) => log.tasks ?? []).filter((task) => task.status === 'failure')
            throw new Error(`${(error as Error).message}: ${JSON.stringify(failed.map((task) => ({ vm: task.data?.id, result: task.result })))}`)
          }
        })
      const rows: Row[] = []
      /** The job's row against `cp` of the repository; with `cpu`, the service's CPU during the job per GiB, against the copy's. */
      const againstCopy = async (name: string, seconds: number, pin: boolean, cpu?: Cpu): Promise<void> => {
        const bytes = bytesUnder(repositoryDir)
        const copied = await copy(repositoryDir, join(work, 'copy'), pin)
        rmSync(join(work, 'copy'), { recursive: true })
        rows.push({ name, keel: `${rate(bytes, seconds)} (${mib(bytes)} in ${seconds.toFixed(1)} s)`, baseline: `cp: ${rate(bytes, copied.seconds)}`, ratio: copied.seconds / seconds })
        if (cpu === undefined) return
        const gib = bytes / (1024 * MiB)
        const perGib = ({ user, system }: Cpu): string => `${(user / gib).toFixed(2)} / ${(system / gib).toFixed(2)} s`
        rows.push({ name: `${name}: CPU per GiB, user / system`, keel: perGib(cpu), baseline: `cp: ${perGib(copied.cpu)}`, ratio: (cpu.user + cpu.system) / (copied.cpu.user + copied.cpu.system) })
      }

      // The lab's disks copied (synced) before the jobs, and the copy kept until the end, so that the page cache fills
      // the memory: the job and the `cp` after it then both take their pages back from the page cache. On this
      // machine (a VM whose host takes back memory the guest has left free; bench/RESULTS.md, 2026-11-27 18:07 UTC) a
      // page from the free memory costs its writer 1.4-3.0 s of system CPU per GiB against 0.6-0.9 for one taken
      // back from the cache: the job, run first into free memory, paid it and the `cp` after it did not.
      const disks = join(work, 'data', 'srs')
      const filled = await copy(disks, join(work, 'page-cache'), false)
      const diskBytes = bytesUnder(disks)
      rows.push({
        name: "cp of the lab's disks before the jobs, into free memory (the copy kept, so that the job and the cp after it take their pages from the page cache)",
        keel: '',
        baseline: `cp: ${rate(diskBytes, filled.seconds)}, ${(filled.cpu.system / (diskBytes / (1024 * MiB))).toFixed(2)} s of system CPU per GiB; then free memory ${mib(freeMemory())}`,
      })

      const full = await job('full')
      const probe = `${server.url}/rest/v0/vms/${vms[0]?.vm ?? ''}`
      const fullJob = async (setup: string, pin: boolean): Promise<void> => {
        const idle = p99(await latencies(probe, api.headers, { count: 500 }))
        const before = cpuTimes(server.child)
        const threads = followThreads(server.child.pid ?? 0)
        const fullRun = run(full.id)
        const during = latencies(probe, api.headers, { done: fullRun.catch(() => undefined) })
        const seconds = await fullRun
        const after = cpuTimes(server.child)
        const byThread = threads.stop()
        const gib = bytesUnder(repositoryDir) / (1024 * MiB)
        // The service's CPU includes answering the reads measured beside the job.
        await againstCopy(`full job, ${options.vms} VMs (plain XVA)${setup}`, seconds, pin, { user: after.user - before.user, system: after.system - before.system })
        const busy = await during
        rows.push({ name: `API p99 during the full job (${busy.length} reads, one sent every ${PROBE_INTERVAL_MS} ms)${setup}`, keel: `${p99(busy).toFixed(1)} ms`, baseline: `idle: ${idle.toFixed(1)} ms`, ratio: p99(busy) / idle })
        // Where the CPU went by thread, and how long the event loop's thread was ready but waited for a core.
        const { main } = byThread
        rows.push({ name: `same: main thread's run-queue wait, per second of the job${setup}`, keel: `${((main.waited / seconds) * 1000).toFixed(1)} ms/s (${main.waited.toFixed(2)} s)`, baseline: `its CPU: ${((main.user + main.system) / seconds).toFixed(2)} core`, ratio: main.waited / seconds })
        const roles: ThreadRole[] = ['main', 'workers', 'others']
        const perGib = roles.map((role) => `${role} ${(byThread[role].user / gib).toFixed(2)}/${(byThread[role].system / gib).toFixed(2)}`).join(', ')
        rows.push({ name: `same: CPU per GiB by thread, user/system${setup}`, keel: perGib, baseline: 'waits per GiB: ' + roles.map((role) => `${role} ${(byThread[role].waited / gib).toFixed(2)}`).join(', ') })
        rmSync(join(repositoryDir, 'xo-vm-backups'), { recursive: true })
      }
      await fullJob('', false)

      const delta = await job('delta')
      const firstSeconds = await run(delta.id)
      const firstBytes = bytesUnder(repositoryDir)
      await againstCopy(`delta job, first run (full VHDs)`, firstSeconds, false)
      const step = Math.max(1, Math.round(100 / options.changePercent))
      for (const { vdi } of vms) {
        const response = await fetch(`${server.url}/rest/v0/vdis/${vdi}.vhd`, { method: 'PUT', headers: api.headers, body: await changePatch(vdi, size, step) })
        if (response.status !== 204) throw new Error(`PUT ${vdi}.vhd: ${response.status} ${await response.text()}`)
      }
      const deltaSeconds = await run(delta.id)
      const deltaBytes = bytesUnder(repositoryDir) - firstBytes
      rows.push({ name: `delta run after ${options.changePercent}% of the blocks changed: time`, keel: `${deltaSeconds.toFixed(2)} s`, baseline: `first run: ${firstSeconds.toFixed(2)} s`, ratio: deltaSeconds / firstSeconds })
      rows.push({ name: 'same: bytes written', keel: mib(deltaBytes), baseline: `first run: ${mib(firstBytes)}`, ratio: deltaBytes / firstBytes })

      if (options.pin) {
        rmSync(join(repositoryDir, 'xo-vm-backups'), { recursive: true })
        // Every thread the service has now; the threads it starts later inherit the main thread's core.
        const pinned = spawnSync('taskset', ['-a', '-p', '-c', '0', String(server.child.pid)])
        if (pinned.status !== 0) throw new Error(`taskset -a -p: ${pinned.stderr.toString()}`)
        await fullJob(', Keel and cp on core 0', true)
      }

      const lines = [
        `Backups (${options.vms} VMs × ${options.dataMiB} MiB written; Keel and cp unpinned${options.pin ? ', then both on core 0 where the rows say' : ''}):`,
        '',
        '| measure | Keel | baseline | ratio |',
        '|---|---|---|---|',
        ...rows.map((row) => `| ${row.name} | ${row.keel} | ${row.baseline} | ${row.ratio?.toFixed(2) ?? ''} |`),
      ]
      return lines.join('\n') + '\n'
    } finally {
      await stop(server.child)
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

export function backupsBenchOptions(pin: boolean): BackupsBenchOptions {
  const number = (name: string, fallback: number): number => {
    const value = Number(process.env[name] ?? fallback)
    if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`)
    return value
  }
  return { vms: number('BENCH_BACKUP_VMS', 10), dataMiB: number('BENCH_BACKUP_MIB', 1024), changePercent: number('BENCH_BACKUP_CHANGE', 5), pin }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(await backupsBench(backupsBenchOptions(spawnSync('taskset', ['-c', '0', 'true']).status === 0)))
}
