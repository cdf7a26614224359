import t from 'tap'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { packageRoot } from '../../src/paths.js'

const MiB = 1024 * 1024
/**
 * V8 heap allowed to the service: the disk below is five times larger. The
 * start on a new data directory (the demo's seed, every module loaded) peaks
 * near 52 MiB live; at 64 the collector ran out of room now and then once
 * the consoles' modules came, so 80.
 */
const HEAP_MiB = 80
const DISK = 5 * HEAP_MiB * MiB
const AUTH = 'Basic ' + Buffer.from('admin@admin.net:heap-secret').toString('base64')

/** Deterministic, incompressible-looking content, made 1 MiB at a time and hashed as it goes. */
function* content(hash: ReturnType<typeof createHash>): Generator<Buffer> {
  for (let mib = 0; mib < DISK / MiB; mib++) {
    // Every fourth MiB is zero, so holes are exercised too.
    const chunk = mib % 4 === 3 ? Buffer.alloc(MiB) : createHash('sha512').update(String(mib)).digest().toString('hex').repeat(MiB / 128).slice(0, MiB)
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, 'latin1')
    hash.update(bytes)
    yield bytes
  }
}

function upload(url: string, body: Iterable<Buffer>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { authorization: AUTH, 'content-length': DISK } })
    req.on('response', (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => (text += chunk.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
    })
    req.on('error', reject)
    Readable.from(body).pipe(req)
  })
}

t.test('a disk five times larger than the heap exports whole, in bounded memory', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-heap-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MiB}`, join(packageRoot, 'dist/src/cli/main.js'), 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env['PATH'] ?? '', KEEL_ADMIN_PASSWORD: 'heap-secret' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => {
    child.kill('SIGTERM')
  })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  let url: string | undefined
  while (url === undefined) {
    if (child.exitCode !== null) throw new Error(`the service exited: ${out}`)
    await once(child.stdout, 'data')
    url = /listening on (http:\/\/[^\s]+)/.exec(out)?.[1]
  }
  const memory = (field: 'VmRSS' | 'VmHWM'): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) * 1024
  const started = memory('VmRSS')
  const srs = (await (await fetch(`${url}/rest/v0/srs?fields=id,name_label`, { headers: { authorization: AUTH } })).json()) as Array<{ id: string; name_label: string }>
  const sr = srs.find((candidate) => candidate.name_label === 'NFS shared storage')
  if (sr === undefined) throw new Error('no NFS SR')

  const sent = createHash('sha256')
  const created = await upload(`${url}/rest/v0/srs/${sr.id}/vdis?raw=true&name_label=big`, content(sent))
  t.equal(created.status, 201, created.text)
  const { id } = JSON.parse(created.text) as { id: string }

  const raw = await fetch(`${url}/rest/v0/vdis/${id}.raw?nbdConcurrency=4`, { headers: { authorization: AUTH } })
  t.equal(Number(raw.headers.get('content-length')), DISK)
  const received = createHash('sha256')
  let length = 0
  for await (const chunk of Readable.fromWeb(raw.body as import('node:stream/web').ReadableStream<Uint8Array>)) {
    received.update(chunk as Buffer)
    length += (chunk as Buffer).length
  }
  t.equal(length, DISK)
  t.equal(received.digest('hex'), sent.digest('hex'), 'the raw export is the uploaded content')

  const vhd = await fetch(`${url}/rest/v0/vdis/${id}.vhd`, { headers: { authorization: AUTH } })
  let vhdLength = 0
  for await (const chunk of Readable.fromWeb(vhd.body as import('node:stream/web').ReadableStream<Uint8Array>)) vhdLength += (chunk as Buffer).length
  t.equal(vhdLength, Number(vhd.headers.get('content-length')), 'the VHD export is whole')
  t.ok(vhdLength > DISK / 2, 'and holds the data blocks')

  // What streaming adds to the idle service is bounded by blocks in flight, not by the disk's size.
  const growth = memory('VmHWM') - started
  t.ok(growth < 96 * MiB, `streaming a ${DISK / MiB} MiB disk raised the peak RSS by ${Math.round(growth / MiB)} MiB`)
})
