// Child process for the SSE scale benchmark: the event-stream clients, on the core the server
// does not use. Input: one JSON argument (ClientsRequest). Opens the connections (connection i
// with token i modulo their count), subscribes each to VM names and power states, prints `ready`;
// then over stdin: `count` (updates received), `latency` (p50 and p99 ms of the sampled
// connections since the last ask), `stall N COOKIE` (N more connections with that cookie,
// subscribed to whole VM records, that never read: prints `stalled`).
import { connect, type Socket } from 'node:net'
import { createInterface } from 'node:readline'

export interface ClientsRequest {
  readonly url: string
  /** the cookie values to open connections with, used in turn */
  readonly cookies: readonly string[]
  readonly connections: number
  /** one connection in this many samples its delivery delays */
  readonly sampleEvery: number
}

const request = JSON.parse(process.argv[2] ?? '{}') as ClientsRequest
const { hostname, port } = new URL(request.url)
let deliveries = 0
let latencies: number[] = []
const sockets: Socket[] = []

/** A connection reading its frames as they come, counting updates and reading the stamp of sampled ones. */
function open(cookie: string, sampled: boolean): Promise<string> {
  const socket = connect(Number(port), hostname)
  sockets.push(socket)
  socket.setEncoding('latin1')
  socket.write(`GET /rest/v0/events HTTP/1.1\r\nHost: ${hostname}\r\nCookie: ${cookie}\r\n\r\n`)
  let tail = ''
  const count = (chunk: string): void => {
    const now = performance.timeOrigin + performance.now()
    const text = tail + chunk
    let at = text.indexOf('event: update')
    let last = 0
    while (at !== -1) {
      deliveries++
      if (sampled) {
        const stamp = text.indexOf('"t', at)
        const end = text.indexOf('"', stamp + 2)
        if (stamp !== -1 && end !== -1) latencies.push(now - Number(text.slice(stamp + 2, end)))
      }
      last = at + 13
      at = text.indexOf('event: update', last)
    }
    tail = text.slice(Math.max(last, text.length - 12))
  }
  return new Promise((resolve, reject) => {
    socket.once('error', reject)
    const onData = (chunk: string): void => {
      const match = /"id":"([^"]*)"/.exec(chunk)
      if (match === null) return
      socket.off('data', onData)
      socket.on('data', count)
      resolve(match[1] as string)
    }
    socket.on('data', onData)
  })
}

async function subscribe(cookie: string, id: string, fields: readonly string[] | undefined): Promise<void> {
  const response = await fetch(`${request.url}/rest/v0/events/${id}/subscriptions`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ collection: 'VM', ...(fields === undefined ? {} : { fields }) }),
  })
  await response.arrayBuffer()
  if (response.status !== 201) throw new Error(`subscription failed: ${response.status}`)
}

async function inBatches(count: number, size: number, work: (index: number) => Promise<void>): Promise<void> {
  for (let first = 0; first < count; first += size) await Promise.all(Array.from({ length: Math.min(size, count - first) }, (_, i) => work(first + i)))
}

await inBatches(request.connections, 100, async (i) => {
  const cookie = request.cookies[i % request.cookies.length] as string
  await subscribe(cookie, await open(cookie, i % request.sampleEvery === 0), ['name_label', 'power_state'])
})
process.stdout.write('ready\n')

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN

createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, first, second] = line.split(' ')
  if (command === 'count') process.stdout.write(`count ${deliveries}\n`)
  else if (command === 'latency') {
    const sorted = latencies.sort((a, b) => a - b)
    latencies = []
    process.stdout.write(`latency ${percentile(sorted, 0.5).toFixed(1)} ${percentile(sorted, 0.99).toFixed(1)} ${sorted.length}\n`)
  } else if (command === 'stall') {
    const cookie = second as string
    void inBatches(Number(first), 50, async () => {
      const stalled = connect(Number(port), hostname)
      sockets.push(stalled)
      stalled.write(`GET /rest/v0/events HTTP/1.1\r\nHost: ${hostname}\r\nCookie: ${cookie}\r\n\r\n`)
      const id = await new Promise<string>((resolve) => {
        let text = ''
        const onData = (chunk: Buffer): void => {
          text += chunk.toString('latin1')
          const match = /"id":"([^"]*)"/.exec(text)
          if (match === null) return
          stalled.off('data', onData)
          stalled.pause()
          resolve(match[1] as string)
        }
        stalled.on('data', onData)
      })
      await subscribe(cookie, id, undefined)
    }).then(() => process.stdout.write('stalled\n'))
  }
})
process.on('SIGTERM', () => {
  for (const socket of sockets) socket.destroy()
  process.exit(0)
})
