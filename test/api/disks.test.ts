import t from 'tap'
import { createHash } from 'node:crypto'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { request } from 'node:http'
import { Readable } from 'node:stream'
import { BLOCK_SIZE, blockCount, zeros } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, patternBlock, run, tempDir, testDisk, type TestDisk } from '../helpers/disks.js'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { followTasks } from '../helpers/tasks.js'

interface Vdi {
  readonly id: string
  readonly size: number
  readonly $SR: string
}

async function vhdOf(disk: TestDisk, uuid: string): Promise<Buffer> {
  const plan = planVhdStream({ size: disk.size, allocated: disk.allocated, uuid, now: 0 })
  return collect(encodeVhdStream(plan, disk.blocks()))
}

/** The disk's raw bytes, block by block, so a GiB-sized sparse disk is never held whole. */
async function* rawChunks(disk: TestDisk): AsyncGenerator<Buffer> {
  for (let index = 0; index < blockCount(disk.size); index++) {
    const length = Math.min(BLOCK_SIZE, disk.size - index * BLOCK_SIZE)
    yield (disk.data.get(index) ?? zeros()).subarray(0, length)
  }
}

async function sha256(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of chunks) hash.update(chunk)
  return hash.digest('hex')
}

async function responseHash(response: Response): Promise<string> {
  if (response.body === null) throw new Error('no body')
  return sha256(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>))
}

/** Leftovers of write sessions in the SR folder. */
function temporaryFiles(server: TestServer, vdi: Vdi): string[] {
  try {
    return readdirSync(join(server.dataDir, 'srs', vdi.$SR)).filter((name) => name.endsWith('.tmp'))
  } catch {
    return []
  }
}

const ADMIN = basic('admin@admin.net', 'test-admin-password')

/**
 * PUTs a generated body through node:http with back-pressure (fetch buffers a
 * streamed body); `cutAfter` destroys the socket once that many bytes went out.
 */
function putStream(server: TestServer, path: string, chunks: AsyncIterable<Buffer>, cutAfter?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { method: 'PUT', headers: { authorization: ADMIN } })
    req.on('response', (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', reject)
    void (async () => {
      let sent = 0
      for await (const chunk of chunks) {
        if (cutAfter !== undefined && sent >= cutAfter) {
          req.destroy(new Error('client went away'))
          return
        }
        sent += chunk.length
        if (!req.write(chunk)) await once(req, 'drain')
      }
      req.end()
    })().catch(reject)
  })
}

async function smallestVdi(server: TestServer): Promise<Vdi> {
  const listed = await server.json<Vdi[]>('/rest/v0/vdis?fields=id,size,$SR')
  const sorted = [...listed.body].sort((a, b) => a.size - b.size)
  const vdi = sorted[0]
  if (vdi === undefined) throw new Error('the demo lab has no VDI')
  return vdi
}

async function vhdExport(server: TestServer, vdi: Vdi): Promise<Buffer> {
  const response = await server.request(`/rest/v0/vdis/${vdi.id}.vhd`)
  if (response.status !== 200) throw new Error(`export ${response.status}: ${await response.text()}`)
  return Buffer.from(await response.arrayBuffer())
}

t.test('disk export and import', async (t) => {
  // Outside tools run with spawnSync block the process past the server's keep-alive.
  const server = await startServer({ keepAlive: false })
  t.teardown(() => server.close())
  const vdi = await smallestVdi(server)
  const last = blockCount(vdi.size) - 1
  const disk = testDisk(vdi.size, [0, 5, last], 7)
  const upload = await vhdOf(disk, vdi.id)

  t.test('a VDI never written exports as an empty VHD of its size', async (t) => {
    const response = await server.request(`/rest/v0/vdis/${vdi.id}.vhd`)
    t.equal(response.status, 200)
    const bytes = Buffer.from(await response.arrayBuffer())
    t.equal(Number(response.headers.get('content-length')), bytes.length)
    t.equal(bytes.length, planVhdStream({ size: vdi.size, allocated: [], uuid: vdi.id }).length)
  })

  t.test('VHD import, then export, import, export byte-identical', async (t) => {
    const put = await server.request(`/rest/v0/vdis/${vdi.id}.vhd`, { method: 'PUT', body: upload })
    t.equal(put.status, 204)
    const first = await vhdExport(server, vdi)
    t.equal(first.length, upload.length, 'the three blocks and nothing else')
    t.equal((await server.request(`/rest/v0/vdis/${vdi.id}.vhd`, { method: 'PUT', body: first })).status, 204)
    t.ok((await vhdExport(server, vdi)).equals(first))
    t.same(temporaryFiles(server, vdi), [])
  })

  t.test('raw export is the exact content, and imports back to the same disk', async (t) => {
    const response = await server.request(`/rest/v0/vdis/${vdi.id}.raw?nbdConcurrency=4`)
    t.equal(response.status, 200)
    t.equal(Number(response.headers.get('content-length')), vdi.size)
    t.equal(await responseHash(response), await sha256(rawChunks(disk)))
    const before = await vhdExport(server, vdi)
    t.equal(await putStream(server, `/rest/v0/vdis/${vdi.id}.raw`, rawChunks(disk)), 204)
    t.equal(await responseHash(await server.request(`/rest/v0/vdis/${vdi.id}.raw`)), await sha256(rawChunks(disk)))
    t.equal((await vhdExport(server, vdi)).length, before.length, 'only the blocks holding data were written')
  })

  t.test('VDI migrate carries the content of the disk to the new SR', async (t) => {
    const srs = (await server.json<Array<{ id: string; $pool: string; content_type: string }>>('/rest/v0/srs?fields=id,$pool,content_type')).body.filter((sr) => sr.content_type !== 'iso')
    const from = srs[0]
    const to = srs.find((sr) => sr.id !== from?.id && sr.$pool === from?.$pool)
    if (from === undefined || to === undefined) throw new Error('the demo lab has no two user SRs in a pool')
    const content = Buffer.concat([patternBlock(1), zeros(), patternBlock(2)])
    const created = await server.json<{ id: string }>(`/rest/v0/srs/${from.id}/vdis?raw=true`, { method: 'POST', body: content })
    t.equal(created.status, 201)
    const moved = await server.json<{ id: string }>(`/rest/v0/vdis/${created.body.id}/actions/migrate?sync=true`, jsonBody({ srId: to.id }))
    t.equal(moved.status, 201)
    const raw = await server.request(`/rest/v0/vdis/${moved.body.id}.raw`)
    t.equal(raw.status, 200)
    t.ok(Buffer.from(await raw.arrayBuffer()).equals(content))
  })

  t.test('Range answers 206 with the bytes asked, 416 outside the disk', async (t) => {
    const start = 5 * BLOCK_SIZE - 10
    const partial = await server.request(`/rest/v0/vdis/${vdi.id}.raw`, { headers: { range: `bytes=${start}-${start + 99}` } })
    t.equal(partial.status, 206)
    t.equal(partial.headers.get('content-range'), `bytes ${start}-${start + 99}/${vdi.size}`)
    const expected = Buffer.concat([Buffer.alloc(10), (disk.data.get(5) as Buffer).subarray(0, 90)])
    t.same(Buffer.from(await partial.arrayBuffer()), expected)
    const outside = await server.json<{ code: string }>(`/rest/v0/vdis/${vdi.id}.raw`, { headers: { range: `bytes=${vdi.size}-` } })
    t.equal(outside.status, 416)
    t.equal(outside.body.code, 'RANGE_NOT_SATISFIABLE')
    t.equal(outside.response.headers.get('content-range'), `bytes */${vdi.size}`)
  })

  t.test('Range: a suffix (longer than the disk too) and an end past the disk are served; several ranges, another unit or a malformed header get the whole disk', async (t) => {
    const size = vdi.size
    const partial = async (range: string): Promise<{ status: number; contentRange: string | null; bytes: Buffer }> => {
      const response = await server.request(`/rest/v0/vdis/${vdi.id}.raw`, { headers: { range } })
      return { status: response.status, contentRange: response.headers.get('content-range'), bytes: Buffer.from(await response.arrayBuffer()) }
    }
    // The disk's last bytes, from its last block, which the test disk allocates.
    const tail = (disk.data.get(last) as Buffer).subarray(0, size - last * BLOCK_SIZE)
    const suffix = await partial('bytes=-16')
    t.equal(suffix.status, 206)
    t.equal(suffix.contentRange, `bytes ${size - 16}-${size - 1}/${size}`)
    t.same(suffix.bytes, tail.subarray(tail.length - 16))
    const longer = await partial(`bytes=-${size + 1}`)
    t.equal(longer.status, 206, 'a suffix longer than the disk: the whole disk (RFC 9110)')
    t.equal(longer.contentRange, `bytes 0-${size - 1}/${size}`)
    t.equal(longer.bytes.length, size)
    const past = await partial(`bytes=${size - 8}-${size + 1000}`)
    t.equal(past.status, 206)
    t.equal(past.contentRange, `bytes ${size - 8}-${size - 1}/${size}`)
    t.same(past.bytes, tail.subarray(tail.length - 8))
    for (const range of ['bytes=0-9,20-29', 'items=0-9', 'bytes=a-b', 'bytes=-', '0-9']) {
      const response = await server.request(`/rest/v0/vdis/${vdi.id}.raw`, { headers: { range } })
      t.equal(response.status, 200, range)
      t.equal(Number(response.headers.get('content-length')), size, `${range}: the whole disk`)
      t.equal(response.headers.get('content-range'), null, range)
      await response.body?.cancel()
    }
  })

  t.test('Range: a backward range, an empty suffix or a range starting past the disk is refused with 416', async (t) => {
    const size = vdi.size
    for (const range of ['bytes=20-10', 'bytes=-0', `bytes=${size + 5}-${size + 10}`]) {
      const { status, body, response } = await server.json(`/rest/v0/vdis/${vdi.id}.raw`, { headers: { range } })
      t.equal(status, 416, range)
      t.same(body, { error: `range ${range} is outside a disk of ${size} bytes`, code: 'RANGE_NOT_SATISFIABLE', data: { range, size } }, range)
      t.equal(response.headers.get('content-range'), `bytes */${size}`, range)
    }
  })

  t.test('broken uploads leave the disk as it was and nothing behind', async (t) => {
    const before = await vhdExport(server, vdi)
    const corrupt = Buffer.from(upload)
    corrupt[100] = (corrupt[100] as number) ^ 0xff
    const cases: Array<{ name: string; format: 'vhd' | 'raw'; body: Buffer; code: string }> = [
      { name: 'truncated VHD', format: 'vhd', body: upload.subarray(0, upload.length - 1024), code: 'INVALID_DISK_STREAM' },
      { name: 'VHD with a bad footer checksum', format: 'vhd', body: corrupt, code: 'INVALID_DISK_STREAM' },
      { name: 'VHD of another size', format: 'vhd', body: await vhdOf(testDisk(vdi.size + BLOCK_SIZE, [0]), vdi.id), code: 'DISK_SIZE_MISMATCH' },
      { name: 'raw of another size', format: 'raw', body: Buffer.alloc(BLOCK_SIZE, 1), code: 'DISK_SIZE_MISMATCH' },
    ]
    for (const { name, format, body, code } of cases) {
      const put = await server.json<{ code: string; data: Record<string, unknown> }>(`/rest/v0/vdis/${vdi.id}.${format}`, { method: 'PUT', body })
      t.equal(put.status, 422, name)
      t.equal(put.body.code, code, name)
      if (code === 'INVALID_DISK_STREAM') t.type(put.body.data.offset, 'number', `${name} names the offset`)
      t.ok((await vhdExport(server, vdi)).equals(before), `${name}: unchanged`)
      t.same(temporaryFiles(server, vdi), [], `${name}: no temporary file`)
    }
  })

  t.test('a client that disconnects mid-upload changes nothing', async (t) => {
    const before = await vhdExport(server, vdi)
    const tasks = await followTasks(server)
    t.teardown(() => tasks.close())
    await t.rejects(putStream(server, `/rest/v0/vdis/${vdi.id}.raw`, rawChunks(disk), 20 * BLOCK_SIZE))
    await tasks.ended(1)
    t.ok((await vhdExport(server, vdi)).equals(before))
    t.same(temporaryFiles(server, vdi), [])
  })

  t.test('qemu-img reads what Keel exports, and Keel imports what qemu-img writes', async (t) => {
    const dir = tempDir()
    t.teardown(dir.cleanup)
    const vhdPath = join(dir.path, 'export.vhd')
    writeFileSync(vhdPath, await vhdExport(server, vdi))
    const rawPath = join(dir.path, 'converted.raw')
    const convert = run('qemu-img', ['convert', '--image-opts', `driver=vpc,force_size_calc=current_size,file.filename=${vhdPath}`, '-O', 'raw', rawPath])
    t.equal(convert.status, 0, convert.stderr)
    const { createReadStream } = await import('node:fs')
    t.equal(await sha256(createReadStream(rawPath)), await sha256(rawChunks(disk)))
    const qemuVhd = join(dir.path, 'qemu.vhd')
    const back = run('qemu-img', ['convert', '-f', 'raw', '-O', 'vpc', '-o', 'subformat=dynamic,force_size=on', rawPath, qemuVhd])
    t.equal(back.status, 0, back.stderr)
    const { readFileSync } = await import('node:fs')
    const put = await server.json<{ code?: string }>(`/rest/v0/vdis/${vdi.id}.vhd`, { method: 'PUT', body: readFileSync(qemuVhd) })
    t.equal(put.status, 204, JSON.stringify(put.body))
    const raw = await server.request(`/rest/v0/vdis/${vdi.id}.raw`)
    t.equal(await responseHash(raw), await sha256(rawChunks(disk)))
  })

  t.test('access control: export-content and import-content', async (t) => {
    const email = 'disk-reader@example.net'
    const created = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: 'a-user-password' }))
    t.equal(created.status, 201)
    const auth = basic(email, 'a-user-password')
    const before = await vhdExport(server, vdi)
    const get = await server.json<{ code: string }>(`/rest/v0/vdis/${vdi.id}.vhd`, { auth })
    t.equal(get.status, 403)
    t.equal(get.body.code, 'NOT_ENOUGH_PRIVILEGES')
    const put = await server.json<{ code: string }>(`/rest/v0/vdis/${vdi.id}.vhd`, { method: 'PUT', body: upload, auth })
    t.equal(put.status, 403)
    t.ok((await vhdExport(server, vdi)).equals(before))
  })

  t.test('an unknown VDI is a 404', async (t) => {
    const missing = await server.json<{ code: string }>('/rest/v0/vdis/00000000-0000-4000-8000-000000000000.vhd')
    t.equal(missing.status, 404)
    t.equal(missing.body.code, 'NO_SUCH_OBJECT')
  })
})
