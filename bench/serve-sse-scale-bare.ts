// Child process for the SSE scale baseline: a bare node:http server holding event-stream
// responses in GROUPS groups (by order of arrival, as Keel's benchmark users hold roles), answering
// subscriptions with 201, and on `run RATE SECONDS` writing each change's frame to the clients of
// one group in turn, one write per event and client, at the same rate as Keel's lab changes.
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'

const groups = Number(process.argv[2] ?? 100)
const members: Array<Set<ServerResponse>> = Array.from({ length: groups }, () => new Set())
let arrivals = 0
const server = createServer((req, res) => {
  if (req.method === 'POST') {
    req.resume()
    res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"VM"}')
    return
  }
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' })
  res.write(`event: init\ndata: {"id":"bare-${arrivals}"}\n\n`)
  const group = members[arrivals++ % groups] as Set<ServerResponse>
  group.add(res)
  res.once('close', () => group.delete(res))
})

async function run(rate: number, seconds: number): Promise<void> {
  const started = performance.now()
  const total = rate * seconds
  let applied = 0
  while (applied < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate))
    for (; applied < due; applied++) {
      const stamp = `t${(performance.timeOrigin + performance.now()).toFixed(3)}`
      const frame = `id: ${1795388518461001 + applied}\nevent: update\ndata: {"$subscription":"VM","name_label":"${stamp}","power_state":"Running"}\n\n`
      for (const client of members[applied % groups] as Set<ServerResponse>) client.write(frame)
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  process.stdout.write(`applied ${((performance.now() - started) / 1000).toFixed(3)} ${applied}\n`)
}

server.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`))
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, first, second] = line.split(' ')
  if (command === 'run') void run(Number(first), Number(second))
  else if (command === 'cpu') {
    const usage = process.cpuUsage()
    process.stdout.write(`cpu ${usage.user + usage.system}\n`)
  } else if (command === 'rss') process.stdout.write(`rss ${process.memoryUsage().rss}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
