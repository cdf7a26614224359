import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { createReadStream, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { BLOCK_SIZE, blockCount, zeros } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, tempDir, testDisk, type TestDisk } from '../helpers/disks.js'
import { keel } from '../helpers/cli.js'
import { jsonBody, startServer } from '../helpers/server.js'

// The two tests share nothing (each has its own server and folder), so they run side by side.
t.jobs = 2

async function* rawChunks(disk: TestDisk): AsyncGenerator<Buffer> {
  for (let index = 0; index < blockCount(disk.size); index++) {
    yield (disk.data.get(index) ?? zeros()).subarray(0, Math.min(BLOCK_SIZE, disk.size - index * BLOCK_SIZE))
  }
}

async function sha256(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of chunks) hash.update(chunk)
  return hash.digest('hex')
}

const fileHash = (path: string): Promise<string> => sha256(createReadStream(path))

t.test('vdi export and import against the server', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const token = (await server.json<{ token: { id: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), redirect: 'follow' })).body.token.id
  const env = { KEEL_URL: server.url, KEEL_TOKEN: token }
  const listed = await server.json<Array<{ id: string; size: number }>>('/rest/v0/vdis?fields=id,size,$SR&limit=1000')
  const vdi = [...listed.body].sort((a, b) => a.size - b.size)[0]
  if (vdi === undefined) throw new Error('the demo lab has no VDI')
  const disk = testDisk(vdi.size, [0, 5, blockCount(vdi.size) - 1], 3)
  const upload = await collect(encodeVhdStream(planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: vdi.id, now: 0 }), disk.blocks()))
  t.equal((await server.request(`/rest/v0/vdis/${vdi.id}.vhd`, { method: 'PUT', body: upload })).status, 204)
  const serverVhd = async (): Promise<Buffer> => Buffer.from(await (await server.request(`/rest/v0/vdis/${vdi.id}.vhd`)).arrayBuffer())

  const vhdFile = join(dir.path, 'disk.vhd')
  t.test('vhd export is the bytes the server serves', async (t) => {
    const run = await keel(['vdi', 'export', vdi.id, '--format', 'vhd', '-o', vhdFile, '--concurrency', '2'], env)
    t.equal(run.status, 0, run.stderr)
    t.equal(run.stderr, '', 'no progress bar when stderr is not a terminal')
    t.ok(readFileSync(vhdFile).equals(await serverVhd()))
  })

  const rawFile = join(dir.path, 'disk.raw')
  const expected = await sha256(rawChunks(disk))
  t.test('raw export is the disk content, flags given as --url/--token', async (t) => {
    const run = await keel(['vdi', 'export', vdi.id, '-o', rawFile, '--url', server.url, '--token', token, '--concurrency', '4'])
    t.equal(run.status, 0, run.stderr)
    t.equal(statSync(rawFile).size, vdi.size)
    t.equal(await fileHash(rawFile), expected)
  })

  t.test('--resume continues a truncated raw export to identical bytes', async (t) => {
    truncateSync(rawFile, 5 * BLOCK_SIZE + 12345)
    const run = await keel(['vdi', 'export', vdi.id, '--format', 'raw', '-o', rawFile, '--resume'], env)
    t.equal(run.status, 0, run.stderr)
    t.equal(await fileHash(rawFile), expected)
    const again = await keel(['vdi', 'export', vdi.id, '--format', 'raw', '-o', rawFile, '--resume'], env)
    t.equal(again.status, 0, `a complete file is left as it is: ${again.stderr}`)
    t.equal(statSync(rawFile).size, vdi.size)
  })

  t.test('snapshot export goes to vdi-snapshots', async (t) => {
    const snapshots = await server.json<Array<{ id: string }>>('/rest/v0/vdi-snapshots?fields=id&limit=1')
    const snapshot = snapshots.body[0]
    if (snapshot === undefined) throw new Error('the demo lab has no VDI snapshot')
    const file = join(dir.path, 'snapshot.vhd')
    const run = await keel(['vdi', 'export', snapshot.id, '--snapshot', '-o', file], env)
    t.equal(run.status, 0, run.stderr)
    const served = Buffer.from(await (await server.request(`/rest/v0/vdi-snapshots/${snapshot.id}.vhd`)).arrayBuffer())
    t.ok(readFileSync(file).equals(served))
  })

  t.test('import --into puts an export back', async (t) => {
    const other = testDisk(vdi.size, [1], 9)
    const otherVhd = await collect(encodeVhdStream(planVhdStream({ size: other.size, allocated: other.allocated, uuid: vdi.id, now: 0 }), other.blocks()))
    t.equal((await server.request(`/rest/v0/vdis/${vdi.id}.vhd`, { method: 'PUT', body: otherVhd })).status, 204)
    t.notOk((await serverVhd()).equals(readFileSync(vhdFile)))
    const run = await keel(['vdi', 'import', vhdFile, '--into', vdi.id], env)
    t.equal(run.status, 0, run.stderr)
    t.equal(run.stdout, '')
    t.ok((await serverVhd()).equals(readFileSync(vhdFile)))
  })

  t.test('a missing VDI fails with the server error and leaves no file', async (t) => {
    const before = readdirSync(dir.path)
    const missing = '00000000-0000-4000-8000-000000000000'
    const run = await keel(['vdi', 'export', missing, '--format', 'raw', '-o', join(dir.path, 'missing.raw')], env)
    t.not(run.status, 0)
    t.match(run.stderr, `no such`)
    t.match(run.stderr, 'NO_SUCH_OBJECT')
    t.match(run.stderr, 'HTTP 404')
    t.same(readdirSync(dir.path), before)
  })

  t.test('an import of the wrong size fails with DISK_SIZE_MISMATCH', async (t) => {
    const small = join(dir.path, 'small.img')
    writeFileSync(small, Buffer.alloc(BLOCK_SIZE, 1))
    const before = await serverVhd()
    const run = await keel(['vdi', 'import', small, '--into', vdi.id], env)
    t.not(run.status, 0)
    t.match(run.stderr, 'DISK_SIZE_MISMATCH')
    t.match(run.stderr, 'HTTP 422')
    t.ok((await serverVhd()).equals(before))
  })

  t.test('a bad token is the server refusing', async (t) => {
    const run = await keel(['vdi', 'export', vdi.id, '--format', 'vhd', '-o', join(dir.path, 'denied.vhd')], { ...env, KEEL_TOKEN: 'nope' })
    t.not(run.status, 0)
    t.match(run.stderr, 'HTTP 401')
  })
})

interface Seen {
  readonly method: string
  readonly url: URL
  readonly headers: IncomingMessage['headers']
  readonly body: Buffer
}

/** A stand-in for routes the server does not have yet: records each request and answers as told. */
async function stub(t: Test, answer: (seen: Seen, res: ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const request = { method: req.method ?? '', url: new URL(req.url ?? '/', 'http://stub'), headers: req.headers, body: Buffer.concat(chunks) }
      seen.push(request)
      answer(request, res)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

function created(res: ServerResponse, location: string, id: string): void {
  res.writeHead(201, { 'content-type': 'application/json', location })
  res.end(JSON.stringify({ id }))
}

t.test('client side of routes checked against a stub', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const env = (url: string): Record<string, string> => ({ KEEL_URL: url, KEEL_TOKEN: 'tok en' })
  const content = Buffer.from('disk bytes '.repeat(5000))
  const file = join(dir.path, 'upload.img')
  writeFileSync(file, content)

  t.test('vdi import --sr posts the file with names and raw=true, prints the id', async (t) => {
    const server = await stub(t, (_seen, res) => created(res, '/rest/v0/vdis/new-vdi', 'new-vdi'))
    const run = await keel(['vdi', 'import', file, '--sr', 'sr-1', '--name-label', 'my disk', '--name-description', 'from a file'], env(server.url))
    t.equal(run.status, 0, run.stderr)
    t.equal(run.stdout, 'new-vdi\n')
    const [request] = server.seen
    t.equal(request?.method, 'POST')
    t.equal(request?.url.pathname, '/rest/v0/srs/sr-1/vdis')
    t.same(Object.fromEntries(request?.url.searchParams ?? []), { name_label: 'my disk', name_description: 'from a file', raw: 'true' })
    t.equal(request?.headers['content-length'], String(content.length))
    t.equal(request?.headers.cookie, 'authenticationToken=tok%20en')
    t.ok(request?.body.equals(content))
  })

  t.test('vdi import --sr of a .vhd sends no raw flag', async (t) => {
    const server = await stub(t, (_seen, res) => created(res, '/rest/v0/vdis/v2', 'v2'))
    const run = await keel(['vdi', 'import', file, '--format', 'vhd', '--sr', 'sr-1'], env(server.url))
    t.equal(run.status, 0, run.stderr)
    t.equal(run.stdout, 'v2\n')
    t.equal(server.seen[0]?.url.search, '')
  })

  t.test('vdi export with --base and --concurrency', async (t) => {
    const server = await stub(t, (_seen, res) => {
      res.writeHead(200, { 'content-length': content.length })
      res.end(content)
    })
    const out = join(dir.path, 'delta.vhd')
    const run = await keel(['vdi', 'export', 'vdi-1', '--format', 'vhd', '-o', out, '--concurrency', '3', '--base', 'snap-1'], env(server.url))
    t.equal(run.status, 0, run.stderr)
    t.equal(server.seen[0]?.url.pathname, '/rest/v0/vdis/vdi-1.vhd')
    t.same(Object.fromEntries(server.seen[0]?.url.searchParams ?? []), { nbdConcurrency: '3', base: 'snap-1' })
    t.ok(readFileSync(out).equals(content))
  })

  t.test('--resume starts over when the server ignores the range', async (t) => {
    const server = await stub(t, (_seen, res) => {
      res.writeHead(200, { 'content-length': content.length })
      res.end(content)
    })
    const out = join(dir.path, 'resumed.raw')
    writeFileSync(out, 'stale beginning')
    const run = await keel(['vdi', 'export', 'vdi-1', '--format', 'raw', '-o', out, '--resume'], env(server.url))
    t.equal(run.status, 0, run.stderr)
    t.equal(server.seen[0]?.headers.range, 'bytes=15-')
    t.ok(readFileSync(out).equals(content))
  })

  t.test('a body shorter than its Content-Length fails and leaves no file', async (t) => {
    const server = await stub(t, (_seen, res) => {
      res.writeHead(200, { 'content-length': content.length })
      res.write(content.subarray(0, 1000), () => res.destroy())
    })
    const folder = join(dir.path, 'cut')
    const { mkdirSync } = await import('node:fs')
    mkdirSync(folder)
    const run = await keel(['vdi', 'export', 'vdi-1', '--format', 'raw', '-o', join(folder, 'cut.raw')], env(server.url))
    t.not(run.status, 0)
    t.match(run.stderr, 'export of vdi-1 failed')
    t.same(readdirSync(folder), [])
  })

  t.test('vm export streams an XVA without Content-Length', async (t) => {
    const server = await stub(t, (_seen, res) => {
      res.writeHead(200, { 'content-type': 'application/x-xva' })
      res.write(content.subarray(0, 100))
      res.end(content.subarray(100))
    })
    const out = join(dir.path, 'vm.xva')
    const run = await keel(['vm', 'export', 'vm-1', '--compress', 'zstd', '-o', out], env(server.url))
    t.equal(run.status, 0, run.stderr)
    t.equal(server.seen[0]?.method, 'GET')
    t.equal(server.seen[0]?.url.pathname, '/rest/v0/vms/vm-1.xva')
    t.equal(server.seen[0]?.url.search, '?compress=zstd')
    t.ok(readFileSync(out).equals(content))
  })

  t.test('vm import posts to the pool and prints the id', async (t) => {
    const server = await stub(t, (_seen, res) => created(res, '/rest/v0/vms/vm-new', 'vm-new'))
    const run = await keel(['vm', 'import', file, '--pool', 'pool-1', '--sr', 'sr-2'], env(server.url))
    t.equal(run.status, 0, run.stderr)
    t.equal(run.stdout, 'vm-new\n')
    t.equal(server.seen[0]?.method, 'POST')
    t.equal(server.seen[0]?.url.pathname, '/rest/v0/pools/pool-1/vms')
    t.equal(server.seen[0]?.url.search, '?sr=sr-2')
    t.equal(server.seen[0]?.headers['content-length'], String(content.length))
    t.ok(server.seen[0]?.body.equals(content))
  })

  t.test('a refusal prints error, code and data', async (t) => {
    const server = await stub(t, (_seen, res) => {
      res.writeHead(422, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: 'not an XVA', code: 'INVALID_XVA', data: { offset: 512 } }))
    })
    const run = await keel(['vm', 'import', file, '--pool', 'pool-1'], env(server.url))
    t.equal(run.status, 1)
    t.match(run.stderr, 'HTTP 422 not an XVA (INVALID_XVA) {"offset":512}')
  })

  t.test('an unreachable server is said so', async (t) => {
    const server = await stub(t, () => {})
    const closed = server.url.replace(/:\d+$/, ':1')
    const run = await keel(['vm', 'export', 'vm-1', '-o', join(dir.path, 'never.xva')], env(closed))
    t.equal(run.status, 1)
    t.match(run.stderr, `cannot reach ${closed}`)
  })

  t.test('usage errors exit 2', async (t) => {
    t.equal((await keel(['vdi', 'import', file], env('http://127.0.0.1:1'))).status, 2, 'neither --sr nor --into')
    t.equal((await keel(['vdi', 'export', 'x', '-o', 'x.vhd', '--resume'], env('http://127.0.0.1:1'))).status, 2, '--resume on vhd')
    t.equal((await keel(['vdi', 'export', 'x', '-o', 'x.qcow2'], env('http://127.0.0.1:1'))).status, 2, 'unknown extension')
    t.equal((await keel(['vm', 'export', 'x', '-o', 'x.xva'])).status, 2, 'no URL')
  })
})
