// `npm run bench`: Keel's read routes under autocannon against a bare node:http
// server answering the same bytes, measured in the same run. Prints a Markdown
// table to paste into bench/RESULTS.md.
import { spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { aclBench } from './acl.js'
import { eventsBench } from './events.js'
import { sseScaleBench, sseScaleOptions } from './sse-scale.js'
import { filterBench } from './filter.js'
import { serializationBench } from './serialize.js'
import { formatsBench } from './formats.js'
import { disksBench, disksBenchOptions } from './disks.js'
import { backupsBench, backupsBenchOptions } from './backups.js'
import { instructionsBench, instructionsOptions } from './instructions.js'
import { xapiBench, xapiBenchOptions } from './xapi.js'
import { xapiDriverBench, xapiDriverBenchOptions } from './xapi-driver.js'
import { consoleBench, consoleBenchOptions } from './console.js'
import { consolesBench, consolesBenchOptions } from './consoles.js'
import { scaleBench, scaleBenchOptions } from './scale.js'
import { dashboardsBench, dashboardsBenchOptions } from './dashboards.js'
import { runScript, startServer, type Server } from './keel-client.js'
import type { XoRecord } from '../src/driver/types.js'
import type { LoadRequest, LoadResult } from './load-child.js'

const duration = Number(process.env['BENCH_DURATION'] ?? 10)
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50)
const vmCount = Number(process.env['BENCH_VMS'] ?? 10000)
/** Runs per side and route, interleaved (an even number puts each side first equally often); the best of each side is kept. */
const httpRuns = Number(process.env['BENCH_HTTP_RUNS'] ?? 6)
const pin = spawnSync('taskset', ['-c', '0,1', 'true']).status === 0
/** `BENCH_ONLY=http,acl,...,sse-scale,...,xapi,xapi-driver,console,consoles,scale,dashboards`: the sections to run (all when unset). */
const only = process.env['BENCH_ONLY']?.split(',').map((name) => name.trim())
const runs = (section: 'http' | 'acl' | 'filter' | 'serialize' | 'formats' | 'disks' | 'backups' | 'events' | 'sse-scale' | 'instructions' | 'xapi' | 'xapi-driver' | 'console' | 'consoles' | 'scale' | 'dashboards'): boolean =>
  only === undefined || only.includes(section)

/** The server gets core 0 and the load generator the rest, as in the notes' pinned series. */
const start = (script: string, args: string[]): Promise<Server> => startServer(script, args, pin, script === 'serve-keel.js' ? 'ignore' : 'inherit')

/** autocannon in a child process on the other core (bench/load-child.ts). */
async function load(url: string, headers: Record<string, string>, uniquePaths = false): Promise<LoadResult> {
  const request: LoadRequest = { url, headers, connections, warmup: Math.min(3, duration), duration, uniquePaths }
  const { line } = await runScript('load-child.js', [JSON.stringify(request)], { core: pin ? 1 : undefined, stderr: 'inherit' })
  return JSON.parse(line) as LoadResult
}

/** The run with more requests per second (its p99 with it), errors of both counted. */
const best = (kept: LoadResult | undefined, next: LoadResult): LoadResult =>
  kept === undefined ? next : { ...(next.requests > kept.requests ? next : kept), errors: kept.errors + next.errors }

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-'))
  const children: ChildProcess[] = []
  try {
    process.stdout.write(`# ${vmCount} VMs, ${connections} connections, ${duration} s per run, best of ${httpRuns} interleaved runs per side, ${cpus().length} cores, node ${process.version}, pinned: ${pin}\n\n`)
    const keel = await start('serve-keel.js', [dataDir, String(vmCount), String(Math.max(3, Math.round(vmCount / 200)))])
    children.push(keel.child)
    const auth = { authorization: 'Basic ' + Buffer.from('admin@admin.net:bench-password').toString('base64') }
    const created = await fetch(`${keel.url}/rest/v0/users/me/authentication_tokens`, { method: 'POST', headers: auth })
    const token = ((await created.json()) as { token: { id: string } }).token.id
    const headers = { cookie: `authenticationToken=${token}` }

    const all = (await (await fetch(`${keel.url}/rest/v0/vms?fields=*`, { headers })).json()) as Array<XoRecord & { href: string }>
    const vm = all.find((candidate) => candidate.power_state === 'Running') ?? all[0]
    if (vm === undefined) throw new Error('no VM in the generated lab')

    const listing = '/rest/v0/vms?fields=name_label,power_state,$container&filter=power_state:Running'
    const cases = [
      { name: 'list running VMs, 3 fields', path: listing, unique: false, cookieless: false },
      { name: 'same, a new query string each time (joins cached records)', path: listing, unique: true, cookieless: false },
      { name: 'one VM', path: `/rest/v0/vms/${vm.id}`, unique: false, cookieless: true },
    ]
    const rows: string[] = []
    /** Each round's own ratio, its two runs next to each other in time: how much of a row's spread is the machine's. */
    const roundNotes: string[] = []
    const row = (name: string, keelResult: LoadResult, bareResult: LoadResult): string =>
      `| ${name} | ${keelResult.requests.toFixed(0)} | ${keelResult.p99.toFixed(2)} | ${bareResult.requests.toFixed(0)} | ${bareResult.p99.toFixed(2)} | ${(keelResult.requests / bareResult.requests).toFixed(2)} | ${(keelResult.p99 / bareResult.p99).toFixed(2)} | ${keelResult.errors + bareResult.errors} |`
    for (const item of runs('http') ? cases : []) {
      const response = await fetch(keel.url + item.path, { headers })
      const bytes = Buffer.from(await response.arrayBuffer())
      const file = join(dataDir, 'body.bin')
      writeFileSync(file, bytes)
      const contentType = response.headers.get('content-type') ?? 'application/json'
      // The baseline answers with Keel's headers, its X-Request-Id included (one fixed value of the same length),
      // and is sent the same requests, the token cookie included: node parses that header for it too.
      const bare = await start('serve-bare.js', [file, contentType, response.headers.get('x-request-id') ?? ''])
      children.push(bare.child)
      // Runs of the sides interleaved, the best of each kept: on this shared machine one
      // run of the bare server measured anywhere between 80k and 98k req/s. Every other
      // round runs them in reverse order, so that neither side always goes first.
      const sides = [
        { name: 'keel', url: keel.url + item.path, headers, unique: item.unique },
        { name: 'bare', url: bare.url + '/', headers, unique: false },
        // The baseline as earlier runs measured it, sent no cookie: their ratios stay comparable.
        ...(item.cookieless ? [{ name: 'cookieless', url: bare.url + '/', headers: {}, unique: false }] : []),
      ]
      const kept = new Map<string, LoadResult>()
      const rounds: string[] = []
      for (let run = 0; run < httpRuns; run++) {
        const round = new Map<string, LoadResult>()
        for (const side of run % 2 === 0 ? sides : [...sides].reverse()) {
          const result = await load(side.url, side.headers, side.unique)
          round.set(side.name, result)
          kept.set(side.name, best(kept.get(side.name), result))
        }
        rounds.push(((round.get('keel')?.requests ?? NaN) / (round.get('bare')?.requests ?? NaN)).toFixed(2))
      }
      const keelResult = kept.get('keel')
      const bareResult = kept.get('bare')
      const cookielessResult = kept.get('cookieless')
      if (keelResult === undefined || bareResult === undefined) throw new Error('BENCH_HTTP_RUNS must be at least 1')
      bare.child.kill('SIGTERM')
      rows.push(row(`${item.name} (${bytes.length} B)`, keelResult, bareResult))
      roundNotes.push(`- ${item.name}: Keel / bare round by round ${rounds.join(', ')}`)
      if (cookielessResult !== undefined) rows.push(row(`${item.name}, against the bare server sent no cookie`, keelResult, cookielessResult))
    }
    if (runs('http')) {
      process.stdout.write('| route | Keel req/s | Keel p99 ms | bare req/s | bare p99 ms | Keel / bare | p99 Keel / bare | errors |\n|---|---|---|---|---|---|---|---|\n')
      process.stdout.write(rows.join('\n') + '\n\n' + roundNotes.join('\n') + '\n\n')
    }
    if (runs('acl')) {
      process.stdout.write('Access control: 50 selector privileges (50 connections, same listing):\n\n')
      process.stdout.write((await aclBench(keel.url, headers, load)) + '\n')
    }
    const vms = all.map(({ href: _href, ...record }) => record as XoRecord)
    if (runs('filter')) process.stdout.write('Filter limits (in process):\n\n' + filterBench(vms) + '\n')
    if (runs('serialize')) {
      process.stdout.write(`Serialization of all ${vms.length} VMs (µs per listing, in-process):\n\n| method | µs/op |\n|---|---|\n`)
      for (const result of serializationBench(vms)) process.stdout.write(`| ${result.name} | ${result.microsPerOp.toFixed(0)} |\n`)
    }
    if (runs('formats')) {
      process.stdout.write(`\nDisk format codecs, 512 MiB mixed disk (MiB/s of disk content, best of 3):\n\n| codec | MiB/s |\n|---|---|\n`)
      for (const result of await formatsBench()) process.stdout.write(`| ${result.name} | ${result.mibPerSecond.toFixed(0)} |\n`)
    }
    for (const child of children.splice(0)) child.kill('SIGTERM')
    // Its own Keel on a small lab and its own baselines; sizes from BENCH_DISK_* (bench/disks.ts).
    if (runs('disks')) process.stdout.write('\n' + (await disksBench(disksBenchOptions(pin))))
    // Its own Keel too; sizes from BENCH_BACKUP_* (bench/backups.ts).
    if (runs('backups')) process.stdout.write('\n' + (await backupsBench(backupsBenchOptions(pin))))
    if (runs('events')) process.stdout.write('\n' + (await eventsBench({ connections: 1000, changes: 10000, vms: 1000, pin })))
    // Its own Keel, clients and baseline; sizes from BENCH_SSE_* (bench/sse-scale.ts).
    if (runs('sse-scale')) process.stdout.write('\n' + (await sseScaleBench(sseScaleOptions(pin))))
    // Its own Keel and baseline, under valgrind; sizes from BENCH_INSTRUCTIONS_* (bench/instructions.ts).
    if (runs('instructions')) process.stdout.write('\n' + (await instructionsBench(instructionsOptions())))
    // Its own Keel, then the simulator on the lab Keel made; size from BENCH_XAPI_VMS (bench/xapi.ts).
    if (runs('xapi')) process.stdout.write('\n' + (await xapiBench(xapiBenchOptions(pin))))
    // Its own generated lab, served by a lab Keel and by the simulator, and a Keel on the XAPI driver; sizes from BENCH_XAPI_DRIVER_* (bench/xapi-driver.ts).
    if (runs('xapi-driver')) process.stdout.write('\n' + (await xapiDriverBench(xapiDriverBenchOptions(pin))))
    // Its own Keel on a generated lab (BENCH_CONSOLE_VMS, 50,000 by default) and Debian's chromium (bench/console.ts).
    if (runs('console')) process.stdout.write('\n' + (await consoleBench(consoleBenchOptions(pin))))
    // Its own Keel on a generated lab of 200 VMs; keys from BENCH_CONSOLE_KEYS, 500 by default (bench/consoles.ts).
    if (runs('consoles')) process.stdout.write('\n' + (await consolesBench(consolesBenchOptions(pin))))
    // Its own lab, generated and served by the CLI; sizes from BENCH_SCALE_VMS and BENCH_SCALE_HOSTS (bench/scale.ts).
    if (runs('scale')) process.stdout.write('\n' + (await scaleBench(scaleBenchOptions(pin))))
    // Its own Keel on a generated lab; sizes from BENCH_DASHBOARD_VMS and BENCH_DASHBOARD_HOSTS (bench/dashboards.ts).
    if (runs('dashboards')) process.stdout.write('\n' + (await dashboardsBench(dashboardsBenchOptions(pin))))
  } finally {
    for (const child of children) child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
