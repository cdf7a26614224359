// Child process for the benchmarks' HTTP load: autocannon in a process of its own, pinned to the
// core the servers do not use, so the load generator is not the benchmark process (whose heap holds
// a 10,000-VM listing and whose GC capped the load near 50k req/s, compressing every ratio towards 1).
// Input: one JSON argument (LoadRequest); output: one JSON line (LoadResult).
import autocannon from 'autocannon'

export interface LoadRequest {
  readonly url: string
  readonly headers: Record<string, string>
  readonly connections: number
  readonly warmup: number
  readonly duration: number
  /** each request asks a query never asked before */
  readonly uniquePaths: boolean
  /** each request's filter gets a term never asked before (the path has a `filter=`): a new filter each time */
  readonly uniqueFilters?: boolean
  /**
   * the number the unique terms (filters or limits) count up from: loads against one server give
   * ranges apart, since a query asked twice is no longer new (the listing cache keeps a query's
   * body from its second time)
   */
  readonly firstUnique?: number
}

export interface LoadResult {
  readonly requests: number
  /** ms, to 10 µs */
  readonly p99: number
  readonly errors: number
  /** responses over the warm-up and the measured run, for a server's CPU time per response over both */
  readonly answered: number
}

/**
 * Response times in 10 µs buckets: autocannon's own histogram keeps whole milliseconds, so a
 * p99 of 1 against 2 could be 1.9 against 1.1 as well as 1.0 against 2.0.
 */
class Histogram {
  readonly #buckets = new Uint32Array(1_000_000)
  #count = 0

  record(ms: number): void {
    this.#buckets[Math.min(this.#buckets.length - 1, Math.floor(ms * 100))]! += 1
    this.#count++
  }

  percentile(p: number): number {
    const rank = Math.ceil(this.#count * p)
    let seen = 0
    for (let bucket = 0; bucket < this.#buckets.length; bucket++) {
      seen += this.#buckets[bucket]!
      if (seen >= rank) return (bucket + 1) / 100
    }
    return NaN
  }
}

const request = JSON.parse(process.argv[2] ?? '{}') as LoadRequest
let counter = request.firstUnique ?? 1_000_000
const requests = request.uniqueFilters
  ? [{ setupRequest: (sent: autocannon.Request) => ({ ...sent, path: `${sent.path ?? '/'}%20!name_label:q${counter++}` }) }]
  : request.uniquePaths
    ? [{ setupRequest: (sent: autocannon.Request) => ({ ...sent, path: `${sent.path ?? '/'}&limit=${counter++}` }) }]
    : undefined
const options = { url: request.url, connections: request.connections, headers: request.headers, ...(requests === undefined ? {} : { requests }) }
const warm = await autocannon({ ...options, duration: request.warmup })
const times = new Histogram()
const result = await new Promise<autocannon.Result>((resolve, reject) => {
  const instance = autocannon({ ...options, duration: request.duration }, (error, done) => (error === null || error === undefined ? resolve(done) : reject(error)))
  instance.on('response', (_client, _status, _bytes, ms) => times.record(ms))
})
const measured: LoadResult = { requests: result.requests.average, p99: times.percentile(0.99), errors: result.errors + result.non2xx, answered: warm.requests.total + result.requests.total }
process.stdout.write(JSON.stringify(measured) + '\n')
