// Child process for the heap harness (bench/xapi-heap.ts): Keel on the lab driver (`lab DATA_DIR`) or on
// the XAPI driver connected to the simulator (`xapi DATA_DIR SIMULATOR_URL PASSWORD`), with the service's
// flags (which expose gc). Prints `URL READY_MS` once ready, then answers each stdin line `stats` or
// `gc` (a full collection first) with one JSON line: V8's heap figures and the collections counted so far;
// `snapshot FILE` writes a heap snapshot there.
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'
import { createInterface } from 'node:readline'
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8'
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'

export interface HeapFigures {
  readonly used: number
  readonly total: number
  readonly oldSpace: number
  readonly largeObjectSpace: number
  /** collections of the young generation so far, and their summed pause (ms of wall time) */
  readonly young: { readonly count: number; readonly ms: number }
  readonly full: { readonly count: number; readonly ms: number }
  /** user and system CPU of the process so far, ms */
  readonly cpuMs: number
}

const young = { count: 0, ms: 0 }
const full = { count: 0, ms: 0 }
new PerformanceObserver((list) => {
  for (const entry of list.getEntries() as Array<PerformanceEntry & { detail?: { kind?: number } }>) {
    const counted = entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR ? young : full
    counted.count++
    counted.ms += entry.duration
  }
}).observe({ entryTypes: ['gc'] })

const [mode, dataDir, simulatorUrl, password] = process.argv.slice(2)
if ((mode !== 'lab' && mode !== 'xapi') || dataDir === undefined) throw new Error('usage: serve-keel-heap lab|xapi DATA_DIR [SIMULATOR_URL PASSWORD]')
const app = await createApp({
  dataDir,
  config: loadConfig(undefined, mode === 'xapi' ? { driver: { kind: 'xapi' } } : {}),
  adminPassword: 'bench-password',
  ...(mode === 'xapi' ? { xapi: { allowHttp: true } } : {}),
})
const url = await app.listen(0, '127.0.0.1')
const started = performance.now()
if (mode === 'xapi') {
  if (app.xapi === undefined || simulatorUrl === undefined || password === undefined) throw new Error('Keel did not start on the XAPI driver')
  await app.xapi.connect({ host: simulatorUrl, username: 'root', password, allowUnauthorized: false, readOnly: false }, new AbortController().signal)
}
process.stdout.write(`${url} ${(performance.now() - started).toFixed(0)}\n`)

const space = (name: string): number => getHeapSpaceStatistics().find((s) => s.space_name === name)?.space_used_size ?? NaN
const figures = (): HeapFigures => {
  const heap = getHeapStatistics()
  const cpu = process.cpuUsage()
  return {
    used: heap.used_heap_size,
    total: heap.total_heap_size,
    oldSpace: space('old_space'),
    largeObjectSpace: space('large_object_space'),
    young: { ...young },
    full: { ...full },
    cpuMs: (cpu.user + cpu.system) / 1000,
  }
}
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.startsWith('snapshot ')) {
    process.stdout.write(JSON.stringify(writeHeapSnapshot(line.slice('snapshot '.length))) + '\n')
    return
  }
  if (line === 'gc') globalThis.gc?.()
  // The observer is told of collections on a later turn: the figures wait for it.
  setImmediate(() => process.stdout.write(JSON.stringify(figures()) + '\n'))
})
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
