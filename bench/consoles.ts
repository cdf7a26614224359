// Console round trip: a key sent over a console WebSocket to the framebuffer update that shows it,
// as a viewer sees it (client side, loopback), over a few hundred keys on one console and on eight
// typing at once. Keel runs as the other benchmarks run it (serve-keel.js), on a generated lab.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { mustOpen, type OpenedConsole } from '../test/helpers/console-socket.js'
import { startServer } from './keel-client.js'

export interface ConsolesBenchOptions {
  readonly keys: number
  readonly pin: boolean
}

export const consolesBenchOptions = (pin: boolean): ConsolesBenchOptions => ({ keys: Number(process.env['BENCH_CONSOLE_KEYS'] ?? 500), pin })

const HEADERS = { authorization: 'Basic ' + Buffer.from('admin@admin.net:bench-password').toString('base64') }
/** a to z, then as many backspaces: each key changes the screen (Enter would lead to a password, not echoed) and no line wraps */
const keyAt = (index: number): number => (index % 52 < 26 ? 0x61 + (index % 52) : 0xff08)

/** ms from each key sent to the update that followed it. */
async function typeOn(console: OpenedConsole, keys: number): Promise<number[]> {
  const { viewer } = console
  const first = viewer.updates
  viewer.requestUpdate(false)
  await viewer.until(() => viewer.updates > first)
  const times: number[] = []
  for (let index = 0; index < keys; index++) {
    const updates = viewer.updates
    const started = performance.now()
    viewer.requestUpdate(true)
    viewer.key(keyAt(index))
    await viewer.until(() => viewer.updates > updates)
    times.push(performance.now() - started)
  }
  return times
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN

function row(name: string, times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b)
  return `| ${name} | ${sorted.length} | ${percentile(sorted, 50).toFixed(2)} | ${percentile(sorted, 99).toFixed(2)} | ${(sorted.at(-1) ?? NaN).toFixed(2)} |`
}

export async function consolesBench(options: ConsolesBenchOptions): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-consoles-'))
  const keel = await startServer('serve-keel.js', [dataDir, '200', '3'], options.pin, 'ignore')
  try {
    const listed = await fetch(`${keel.url}/rest/v0/vms?fields=id&filter=power_state:Running`, { headers: HEADERS })
    const running = ((await listed.json()) as Array<{ id: string }>).map((vm) => vm.id)
    const [vm] = running
    if (vm === undefined) throw new Error('the generated lab has no running VM')
    const one = await mustOpen(keel.url, vm, HEADERS)
    const alone = await typeOn(one, options.keys)
    one.ws.close()
    await one.closed
    const eight = await Promise.all(Array.from({ length: 8 }, (_, index) => mustOpen(keel.url, running[index % running.length] ?? vm, HEADERS)))
    const together = (await Promise.all(eight.map((each) => typeOn(each, Math.ceil(options.keys / 8))))).flat()
    for (const each of eight) each.ws.close()
    await Promise.all(eight.map((each) => each.closed))
    return [
      'Consoles, key to the framebuffer update showing it, seen by the viewer (bench/consoles.ts; bar: under 50 ms):',
      '',
      '| consoles | keys | p50 ms | p99 ms | max ms |',
      '|---|---|---|---|---|',
      row('one', alone),
      row('eight typing at once', together),
      '',
    ].join('\n')
  } finally {
    keel.child.kill('SIGTERM')
    rmSync(dataDir, { recursive: true, force: true })
  }
}
