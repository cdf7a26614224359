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
}

export interface LoadResult {
  readonly requests: number
  readonly p99: number
  readonly errors: number
}

const request = JSON.parse(process.argv[2] ?? '{}') as LoadRequest
let counter = 0
const requests = request.uniquePaths
  ? [{ setupRequest: (sent: autocannon.Request) => ({ ...sent, path: `${sent.path ?? '/'}&limit=${1_000_000 + counter++}` }) }]
  : undefined
const options = { url: request.url, connections: request.connections, headers: request.headers, ...(requests === undefined ? {} : { requests }) }
await autocannon({ ...options, duration: request.warmup })
const result = await autocannon({ ...options, duration: request.duration })
const measured: LoadResult = { requests: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx }
process.stdout.write(JSON.stringify(measured) + '\n')
