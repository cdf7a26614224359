// Child process for the benchmark baseline: bare node:http answering precomputed bytes, with the
// headers Keel answered them with (its request id is one fixed value here).
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'

const [file, contentType, requestId] = process.argv.slice(2)
if (file === undefined) throw new Error('usage: serve-bare FILE [CONTENT_TYPE [X_REQUEST_ID]]')
const body = readFileSync(file)
const headers = {
  'Content-Type': contentType ?? 'application/json; charset=utf-8',
  'Content-Length': body.length,
  ...(requestId === undefined ? {} : { 'X-Request-Id': requestId }),
}
const server = createServer((_req, res) => {
  res.writeHead(200, headers)
  res.end(body)
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
