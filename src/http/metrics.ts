import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import { Counter, Gauge, Registry } from 'prom-client'

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]

interface RequestSeries {
  readonly labels: string
  count: number
}

/** One route and method: its durations, and its answers counted by status. */
interface RouteSeries {
  readonly labels: string
  count: number
  sum: number
  /** per bucket, not cumulative */
  readonly buckets: Float64Array
  readonly statuses: Map<number, RequestSeries>
}

const label = (value: string): string => value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')

/**
 * The service's Prometheus metrics, in a registry of its own (several
 * services may share a process in tests). Gauges of process state are read
 * when scraped.
 *
 * Request metrics are plain increments on every response, written out in
 * Prometheus's text format only when scraped, instead of prom-client's own
 * Counter and Histogram: those build a label key per call (a string, then a
 * lookup by it) and check the label names: 13,516 instructions per
 * single-object read for the log line and metrics against 4,617 here
 * (callgrind, `BENCH_ONLY=instructions`, node 20.20.2, 2026-11-26;
 * bench/RESULTS.md).
 */
export class Metrics {
  readonly registry = new Registry()
  /** open long-lived responses (exports, imports, watches), by kind */
  readonly openStreams: Gauge<'kind'>
  /** open event-stream connections */
  readonly eventConnections: Gauge
  readonly #loopDelay: IntervalHistogram
  // Bounded by routes × methods × statuses: route is the matched pattern, never the raw path.
  // Keyed level by level by the route's and method's own strings, which are
  // constants: a key built per request cost an allocation and a hash each time.
  readonly #series = new Map<string, Map<string, RouteSeries>>()
  /** The series answered last: a client polling one route finds it without a lookup. */
  #last: { readonly route: string; readonly method: string; readonly series: RouteSeries } | undefined

  /** @param logLinesDropped the service log's count of lines it could not write */
  constructor(logLinesDropped: () => number) {
    const registers = [this.registry]
    this.openStreams = new Gauge({ name: 'keel_open_streams', help: 'Open streaming responses, by kind', labelNames: ['kind'], registers })
    this.eventConnections = new Gauge({ name: 'keel_event_connections', help: 'Open event-stream connections', registers })
    const loopDelay = (this.#loopDelay = monitorEventLoopDelay({ resolution: 20 }))
    loopDelay.enable()
    new Gauge({
      name: 'keel_event_loop_delay_seconds',
      help: 'Event-loop delay since the previous scrape: mean, p99 and max',
      labelNames: ['stat'],
      registers,
      collect() {
        this.set({ stat: 'mean' }, loopDelay.mean / 1e9 || 0)
        this.set({ stat: 'p99' }, loopDelay.percentile(99) / 1e9)
        this.set({ stat: 'max' }, loopDelay.max / 1e9)
        loopDelay.reset()
      },
    })
    new Gauge({
      name: 'keel_process_memory_bytes',
      help: 'Resident set size and V8 heap in use',
      labelNames: ['kind'],
      registers,
      collect() {
        const usage = process.memoryUsage()
        this.set({ kind: 'rss' }, usage.rss)
        this.set({ kind: 'heap_used' }, usage.heapUsed)
        this.set({ kind: 'heap_total' }, usage.heapTotal)
        this.set({ kind: 'external' }, usage.external)
      },
    })
    new Counter({
      name: 'keel_log_lines_dropped_total',
      help: 'Log lines not written: dropped while the log waiting to be written was at its bound, or lost to a failed write',
      registers,
      collect() {
        this.reset()
        this.inc(logLinesDropped())
      },
    })
  }

  /** `keel_heavy_reads{state}`: heavy reads being served and waiting for a turn (http/heavy-reads.ts), read when scraped. */
  gaugeHeavyReads(reads: { readonly running: number; readonly waiting: number }): void {
    new Gauge({
      name: 'keel_heavy_reads',
      help: 'Heavy reads (large listings) being served, and waiting for their turn',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.set({ state: 'running' }, reads.running)
        this.set({ state: 'waiting' }, reads.waiting)
      },
    })
  }

  observeRequest(route: string, method: string, status: number, seconds: number): void {
    const last = this.#last
    const series = last !== undefined && last.route === route && last.method === method ? last.series : this.#seriesOf(route, method)
    series.count++
    series.sum += seconds
    let bucket = 0
    while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket++
    if (bucket < BUCKETS.length) series.buckets[bucket] = (series.buckets[bucket] ?? 0) + 1
    let requests = series.statuses.get(status)
    if (requests === undefined) series.statuses.set(status, (requests = { labels: `${series.labels},status="${status}"`, count: 0 }))
    requests.count++
  }

  #seriesOf(route: string, method: string): RouteSeries {
    let methods = this.#series.get(route)
    if (methods === undefined) this.#series.set(route, (methods = new Map()))
    let series = methods.get(method)
    if (series === undefined) {
      const labels = `route="${label(route)}",method="${label(method)}"`
      series = { labels, count: 0, sum: 0, buckets: new Float64Array(BUCKETS.length), statuses: new Map() }
      methods.set(method, series)
    }
    this.#last = { route, method, series }
    return series
  }

  /** The Prometheus text exposition. */
  async text(): Promise<string> {
    const all = [...this.#series.values()].flatMap((methods) => [...methods.values()])
    const lines = [
      '# HELP keel_http_requests_total Requests answered, by route, method and status',
      '# TYPE keel_http_requests_total counter',
      ...all.flatMap((series) => [...series.statuses.values()].map((requests) => `keel_http_requests_total{${requests.labels}} ${requests.count}`)),
      '# HELP keel_http_request_duration_seconds Time from the request to the end of its response, by route and method',
      '# TYPE keel_http_request_duration_seconds histogram',
    ]
    for (const series of all) {
      let cumulative = 0
      BUCKETS.forEach((bound, i) => {
        cumulative += series.buckets[i] ?? 0
        lines.push(`keel_http_request_duration_seconds_bucket{le="${bound}",${series.labels}} ${cumulative}`)
      })
      lines.push(`keel_http_request_duration_seconds_bucket{le="+Inf",${series.labels}} ${series.count}`)
      lines.push(`keel_http_request_duration_seconds_sum{${series.labels}} ${series.sum}`)
      lines.push(`keel_http_request_duration_seconds_count{${series.labels}} ${series.count}`)
    }
    return `${lines.join('\n')}\n${await this.registry.metrics()}`
  }

  get contentType(): string {
    return this.registry.contentType
  }

  close(): void {
    this.#loopDelay.disable()
  }
}
