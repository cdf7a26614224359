// Child process for the disk stream benchmark's baselines: bare node:http over the files of DIR.
// GET /NAME streams DIR/NAME through fs.createReadStream (1 MiB highWaterMark), the plainest
// file-to-socket path. PUT writes the body to a new file in DIR and fsyncs it before answering 204,
// as Keel's import makes its file durable before it answers; the file is removed afterwards so
// repeated uploads of a 4 GiB disk do not pile up.
import { createReadStream, createWriteStream } from 'node:fs'
import { open, rm, stat } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'

const [dir] = process.argv.slice(2)
if (dir === undefined) throw new Error('usage: serve-disk-bare DIR')
const folder: string = dir
const MiB = 1024 * 1024
/** Only plain file names of DIR are served: the benchmark asks for the few it wrote. */
const NAME = /^\/([A-Za-z0-9._-]+)$/
let uploads = 0

async function serveFile(name: string, res: ServerResponse): Promise<void> {
  const path = join(folder, name)
  const { size } = await stat(path)
  res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': size })
  await pipeline(createReadStream(path, { highWaterMark: MiB }), res)
}

async function receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = join(folder, `upload-${uploads++}.tmp`)
  try {
    await pipeline(req, createWriteStream(path, { flags: 'wx' }))
    // fsync through a second descriptor: Linux flushes the inode's dirty pages whichever descriptor asks.
    const handle = await open(path, 'r+')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
    res.writeHead(204).end()
  } finally {
    await rm(path, { force: true })
  }
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'PUT') return receive(req, res)
  const name = NAME.exec(req.url ?? '')?.[1]
  if (req.method !== 'GET' || name === undefined) {
    res.writeHead(404).end()
    return
  }
  return serveFile(name, res)
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    // curl closes as soon as the last byte is in; a body already ended was sent whole.
    if (res.writableEnded && (error as { code?: unknown }).code === 'ERR_STREAM_PREMATURE_CLOSE') return
    process.stderr.write(`serve-disk-bare: ${String(error)}\n`)
    res.destroy()
  })
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
