// Child process for the benchmark baseline: bare node:http answering precomputed bytes.
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'

const [file, contentType] = process.argv.slice(2)
if (file === undefined) throw new Error('usage: serve-bare FILE [CONTENT_TYPE]')
const body = readFileSync(file)
const server = createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': contentType ?? 'application/json; charset=utf-8', 'Content-Length': body.length })
  res.end(body)
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
