import t from 'tap'
import { createHash } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { blockCount } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, testDisk } from '../helpers/disks.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, startServer, type TestServer } from '../helpers/server.js'
import { followTasks } from '../helpers/tasks.js'

interface Vdi {
  readonly id: string
  readonly size: number
  readonly $SR: string
}

/**
 * Long against the pauses of a busy machine: a process starved of CPU runs an expired idle timer
 * before it reads the bytes that arrived meanwhile, so a short one cuts a steady upload.
 */
const IDLE = 3000
const ADMIN = basic(ADMIN_EMAIL, ADMIN_PASSWORD)

const temporaryFiles = (server: TestServer, vdi: Vdi): string[] =>
  readdirSync(join(server.dataDir, 'srs', vdi.$SR)).filter((name) => name.endsWith('.tmp'))

async function exportHash(server: TestServer, vdi: Vdi): Promise<string> {
  const response = await server.request(`/rest/v0/vdis/${vdi.id}.vhd`)
  if (response.status !== 200) throw new Error(`export ${response.status}`)
  return createHash('sha256').update(Buffer.from(await response.arrayBuffer())).digest('hex')
}

/** PUTs `body` in `chunks` pieces `interval` ms apart, stopping (without ending) after `stopAfter` pieces. */
function slowPut(server: TestServer, path: string, body: Buffer, chunks: number, interval: number, stopAfter = chunks): Promise<{ status?: number; closed: boolean }> {
  return new Promise((resolve) => {
    const req = request(server.url + path, { method: 'PUT', headers: { authorization: ADMIN, 'content-length': body.length } })
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode, closed: false }))
    })
    req.on('error', () => resolve({ closed: true }))
    req.on('close', () => resolve({ closed: true }))
    void (async () => {
      const size = Math.ceil(body.length / chunks)
      for (let i = 0; i < stopAfter; i++) {
        req.write(body.subarray(i * size, (i + 1) * size))
        if (i === chunks - 1) req.end()
        else await sleep(interval)
      }
    })()
  })
}

t.test('streaming routes are cut after the idle timeout, and only then', async (t) => {
  const server = await startServer({ config: { http: { idleTimeout: IDLE } } })
  t.teardown(() => server.close())
  const listed = await server.json<Vdi[]>('/rest/v0/vdis?fields=id,size,$SR')
  const vdi = listed.body[0]
  if (vdi === undefined) throw new Error('the demo lab has no VDI')
  const disk = testDisk(vdi.size, [0, 3, blockCount(vdi.size) - 1], 5)
  const upload = await collect(encodeVhdStream(planVhdStream({ size: vdi.size, allocated: disk.allocated, uuid: vdi.id, now: 0 }), disk.blocks()))
  const path = `/rest/v0/vdis/${vdi.id}.vhd`

  t.test('an upload that stalls halfway is cut and leaves the disk as it was', async (t) => {
    const before = await exportHash(server, vdi)
    const tasks = await followTasks(server)
    t.teardown(() => tasks.close())
    const started = Date.now()
    const outcome = await slowPut(server, path, upload, 2, 0, 1)
    t.ok(outcome.closed, 'the connection is closed')
    t.ok(Date.now() - started >= IDLE, 'not before the idle timeout')
    // The import is abandoned as the stream breaks; its task ends once the clean-up is done.
    await tasks.ended(1)
    t.same(temporaryFiles(server, vdi), [])
    t.equal(await exportHash(server, vdi), before, 'the disk is unchanged')
  })

  t.test('a slow but steady upload is not cut', async (t) => {
    // 40 pieces 100 ms apart: the upload lasts longer than the idle timeout, no pause comes near it.
    const outcome = await slowPut(server, path, upload, 40, 100)
    t.equal(outcome.status, 204)
    t.same(temporaryFiles(server, vdi), [])
  })
})
