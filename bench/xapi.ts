// XAPI simulator benchmark (issue 27): VM.get_all_records on a generated lab over JSON-RPC and
// XML-RPC, and event.from's delivery of one change per VM, each against Keel's REST listing of the
// same lab measured in the same run (Keel first, then the simulator on the data directory Keel
// made: the two must not serve one directory at once). Times run to the last byte of the answer.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../src/cli/node-flags.js'
import { packageRoot } from '../src/paths.js'
import { encodeMethodCall } from '../src/xapi/xml-rpc.js'
import { secondsSince, startServer, stop } from './keel-client.js'

export interface XapiBenchOptions {
  readonly vms: number
  readonly pin: boolean
  /** timed requests per case; the fastest is kept */
  readonly runs: number
}

export const xapiBenchOptions = (pin: boolean): XapiBenchOptions => ({
  vms: Number(process.env['BENCH_XAPI_VMS'] ?? 10000),
  pin,
  runs: Number(process.env['BENCH_XAPI_RUNS'] ?? 3),
})

const PASSWORD = 'bench-password'

interface Timed {
  readonly seconds: number
  readonly bytes: number
}

/** The fastest of `runs` requests, each timed from its start to the last byte of its answer. */
async function fastest(runs: number, request: () => Promise<Response>): Promise<Timed> {
  let kept: Timed | undefined
  for (let run = 0; run < runs; run++) {
    const started = process.hrtime.bigint()
    const response = await request()
    const bytes = (await response.arrayBuffer()).byteLength
    if (!response.ok) throw new Error(`HTTP ${response.status}`)
    const seconds = secondsSince(started)
    if (kept === undefined || seconds < kept.seconds) kept = { seconds, bytes }
  }
  if (kept === undefined) throw new Error('BENCH_XAPI_RUNS must be at least 1')
  return kept
}

async function keelListing(dataDir: string, options: XapiBenchOptions): Promise<Timed> {
  const keel = await startServer('serve-keel.js', [dataDir, String(options.vms), String(Math.max(3, Math.round(options.vms / 200)))], options.pin, 'ignore')
  try {
    const auth = { authorization: 'Basic ' + Buffer.from(`admin@admin.net:${PASSWORD}`).toString('base64') }
    const created = await fetch(`${keel.url}/rest/v0/users/me/authentication_tokens`, { method: 'POST', headers: auth })
    const token = ((await created.json()) as { token: { id: string } }).token.id
    const headers = { cookie: `authenticationToken=${token}` }
    return await fastest(options.runs, () => fetch(`${keel.url}/rest/v0/vms?fields=*`, { headers }))
  } finally {
    await stop(keel.child)
  }
}

export async function xapiBench(options: XapiBenchOptions): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-xapi-'))
  try {
    const rest = await keelListing(dataDir, options)
    const node = [process.execPath, ...SERVICE_NODE_FLAGS, join(packageRoot, 'dist/bench/serve-xapi.js'), dataDir, PASSWORD]
    const [command, ...args] = options.pin ? ['taskset', '-c', '0', ...node] : node
    const child = spawn(command as string, args, { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...SERVICE_ENV } })
    const lines = createInterface({ input: child.stdout! })
    const nextLine = (): Promise<string> => new Promise((resolve) => lines.once('line', resolve))
    try {
      const url = await nextLine()
      let id = 0
      const json = (method: string, params: unknown[]): Promise<Response> =>
        fetch(`${url}/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method, params, id: ++id }) })
      const result = async <T>(method: string, params: unknown[]): Promise<T> => ((await (await json(method, params)).json()) as { result: T }).result
      const session = await result<string>('session.login_with_password', ['root', PASSWORD, '1.0', 'bench'])
      const overJson = await fastest(options.runs, () => json('VM.get_all_records', [session]))
      const overXml = await fastest(options.runs, () =>
        fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: encodeMethodCall('VM.get_all_records', [session]) }),
      )
      const vmCount = (await result<string[]>('VM.get_all', [session])).length

      // One change per VM: event.from coalesces changes per object, so each VM renamed once is one event.
      const changes = options.vms
      let token = (await result<{ token: string }>('event.from', [session, ['vm'], '', 0])).token
      const started = process.hrtime.bigint()
      // When the lab has made its last change: delivery cannot end before it, so what follows is event.from's own lag.
      const applied = nextLine().then((line) => ({ labSeconds: Number(line.split(' ')[1]), at: process.hrtime.bigint() }))
      child.stdin!.write(`apply ${changes}\n`)
      const renamed = new Set<string>()
      let calls = 0
      while (renamed.size < changes) {
        const batch = await result<{ token: string; events: Array<{ ref: string; snapshot: { name_label: string } }> }>('event.from', [session, ['vm'], token, 60])
        calls++
        token = batch.token
        for (const event of batch.events) if (event.snapshot.name_label.startsWith('renamed ')) renamed.add(event.ref)
      }
      const delivered = process.hrtime.bigint()
      const delivery = secondsSince(started)
      const lab = await applied
      // Negative when the last event came before the lab's report of its last change: no lag to see.
      const lag = Math.max(0, Number(delivered - lab.at) / 1e9)

      const ms = (seconds: number): string => (seconds * 1000).toFixed(0)
      const row = (name: string, timed: Timed): string =>
        `| ${name} | ${ms(timed.seconds)} | ${(timed.bytes / 1024 / 1024).toFixed(1)} | ${(timed.seconds / rest.seconds).toFixed(2)} |`
      return [
        `XAPI simulator, ${options.vms}-VM lab (${vmCount} VM objects with templates, snapshots and control domains), fastest of ${options.runs} requests, to the last byte:\n`,
        '| read | ms | MiB | / Keel REST listing |',
        '|---|---|---|---|',
        row('Keel `GET /rest/v0/vms?fields=*`', rest),
        row('`VM.get_all_records`, JSON-RPC', overJson),
        row('`VM.get_all_records`, XML-RPC', overXml),
        `| \`event.from\` delivery of ${changes} VM renames, all of it (${calls} calls) | ${ms(delivery)} | | ${(delivery / rest.seconds).toFixed(2)} |`,
        `| the same, after the lab's last change (the lab took ${ms(lab.labSeconds)} ms to make them) | ${ms(lag)} | | ${(lag / rest.seconds).toFixed(2)} |`,
        '',
      ].join('\n')
    } finally {
      await stop(child)
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}
