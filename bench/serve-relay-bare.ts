// Child process for the XAPI export benchmarks (issue 28): the least a Node relay can do between the simulator
// and the client, to tell how fast any relay goes on this machine. Started as the XAPI Keel is (same V8 flags,
// environment and core). `GET /pipe?QUERY` pipes the simulator's `/export_raw_vdi?QUERY` (format=raw) to the
// client with stream.pipeline: no auth, no parsing, no length. `GET /decode?QUERY` reads it as VHD (format=vhd)
// with Keel's decoder and writes the disk's raw bytes, zeros for the blocks it lacks, each pool block given
// back once the socket has it: Keel's raw export over XAPI without its routes, tasks, meter or pacer.
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { DiskBlock } from '../src/formats/blocks.js'
import { giveBack } from '../src/formats/lending.js'
import { encodeRawStream } from '../src/formats/raw/raw-encoder.js'
import { openVhdStream } from '../src/formats/vhd/stream-decoder.js'
import { drained } from '../src/http/reply.js'

const [simulatorUrl] = process.argv.slice(2)
if (simulatorUrl === undefined) throw new Error('usage: serve-relay-bare SIMULATOR_URL')

const exported = (query: string): Promise<IncomingMessage> =>
  new Promise((resolve, reject) => get(`${simulatorUrl}/export_raw_vdi${query}`, resolve).once('error', reject))

async function pipe(source: IncomingMessage, res: ServerResponse): Promise<void> {
  res.writeHead(source.statusCode ?? 502, { 'content-type': 'application/octet-stream' })
  await pipeline(source, res)
}

async function decode(source: IncomingMessage, res: ServerResponse): Promise<void> {
  const reader = await openVhdStream(source)
  const allocated = await reader.allocation()
  // Two blocks read ahead, as Keel's XAPI read does: the stream goes on while a block is written out.
  const blocks: AsyncIterable<DiskBlock> = Readable.from(reader.blocks, { highWaterMark: 2 })
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': reader.size })
  for await (const chunk of encodeRawStream({ size: reader.size, allocated, blocks })) {
    if (!res.write(chunk, () => giveBack(chunk))) await drained(res)
    if (res.destroyed) throw new Error('the client went away')
  }
  res.end()
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://relay')
  const relay = url.pathname === '/pipe' ? pipe : url.pathname === '/decode' ? decode : undefined
  if (relay === undefined) {
    res.writeHead(404).end()
    return
  }
  exported(url.search)
    .then((source) => relay(source, res))
    .catch((error: unknown) => {
      process.stderr.write(`serve-relay-bare: ${String(error)}\n`)
      res.destroy()
    })
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
