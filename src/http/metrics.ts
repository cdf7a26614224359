import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/**
 * The service's Prometheus metrics, in a registry of its own (several
 * services may share a process in tests). Request metrics are observed once
 * per response; gauges of process state are read when scraped.
 */
export class Metrics {
  readonly registry = new Registry()
  /** open long-lived responses (exports, imports, watches), by kind */
  readonly openStreams: Gauge<'kind'>
  /** open event-stream connections */
  readonly eventConnections: Gauge
  readonly #requests: Counter<'route' | 'method' | 'status'>
  readonly #duration: Histogram<'route' | 'method'>
  readonly #loopDelay: IntervalHistogram
  // Bounded by routes × methods × statuses: route is the matched pattern, never the raw path.
  readonly #children = new Map<string, { requests: { inc(): void }; duration: { observe(value: number): void } }>()

  constructor() {
    const registers = [this.registry]
    this.#requests = new Counter({ name: 'keel_http_requests_total', help: 'Requests answered, by route, method and status', labelNames: ['route', 'method', 'status'], registers })
    this.#duration = new Histogram({
      name: 'keel_http_request_duration_seconds',
      help: 'Time from the request to the end of its response, by route and method',
      labelNames: ['route', 'method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers,
    })
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
  }

  observeRequest(route: string, method: string, status: number, seconds: number): void {
    // prom-client hashes a label object on every call; the children it returns are kept instead.
    const key = `${method} ${status} ${route}`
    let children = this.#children.get(key)
    if (children === undefined) {
      children = { requests: this.#requests.labels(route, method, String(status)), duration: this.#duration.labels(route, method) }
      this.#children.set(key, children)
    }
    children.requests.inc()
    children.duration.observe(seconds)
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }

  close(): void {
    this.#loopDelay.disable()
  }
}
