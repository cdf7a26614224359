// Child process for the event fan-out baseline: a bare node:http server holding event-stream
// responses and writing each given frame to every one of them, one write per event and client.
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'

const clients = new Set<ServerResponse>()
const server = createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' })
  res.write('event: init\ndata: {"id":"bare"}\n\n')
  clients.add(res)
  res.once('close', () => clients.delete(res))
})

/** Sends `count` frames shaped like Keel's, each stamped with the time it is written. */
async function send(count: number, template: string): Promise<void> {
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const frame = template.replace('STAMP', `t${(performance.timeOrigin + performance.now()).toFixed(3)}`)
    for (const client of clients) client.write(frame)
    if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve))
  }
  process.stdout.write(`applied ${((performance.now() - started) / 1000).toFixed(3)}\n`)
}

server.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`))
createInterface({ input: process.stdin }).on('line', (line) => {
  const space = line.indexOf(' ')
  if (line.startsWith('send ')) {
    const rest = line.slice(space + 1)
    const next = rest.indexOf(' ')
    void send(Number(rest.slice(0, next)), JSON.parse(rest.slice(next + 1)) as string)
  } else if (line === 'cpu') {
    const usage = process.cpuUsage()
    process.stdout.write(`cpu ${usage.user + usage.system}\n`)
  }
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
