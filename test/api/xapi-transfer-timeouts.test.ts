import t from 'tap'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TransferTimeouts } from '../../src/driver/xapi/http-handlers.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { encodeXva } from '../../src/formats/xva/xva-writer.js'
import { collect, rawOf, testDisk, type TestDisk } from '../helpers/disks.js'
import type { TestScope } from '../helpers/lab.js'
import { basic, startServer, type TestServer } from '../helpers/server.js'
import { exported, xapiFootprint } from '../helpers/xapi-footprint.js'
import { PASSWORD, startSimulator, type RunningSimulator } from '../helpers/xapi-simulator.js'

// Transfers to a host that takes the request and then says nothing (issue 28), through the REST API
// on the XAPI driver whatever KEEL_TEST_DRIVER says. The simulator's `stall_transfers` fault is that
// host; the timeouts are short for the test, and each case waits for the outcome, never a fixed time.

const SIZE = 3 * BLOCK_SIZE
/** Short enough for a test, long enough for a simulator in the same process to answer when it does, with the whole suite running on two cores. */
const LIMIT = 5_000

interface Setup {
  readonly xapi: RunningSimulator
  readonly server: TestServer
  readonly pool: string
  /** a shared user SR, served by the master */
  readonly sr: string
  /** a VDI on it, holding `content` */
  readonly vdi: string
  readonly content: Buffer
  readonly spoolDir: string
}

const vhdOf = async (disk: TestDisk): Promise<Buffer> => collect(encodeVhdStream(planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: randomUUID() }), disk.blocks()))

async function setup(t: TestScope, transferTimeouts: TransferTimeouts): Promise<Setup> {
  const xapi = await startSimulator(t)
  const spoolDir = mkdtempSync(join(tmpdir(), 'keel-spool-'))
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }))
  const pools = [{ host: xapi.url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }]
  const server = await startServer({
    config: { driver: { kind: 'xapi' } },
    app: { xapi: { allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools, tempDir: spoolDir, transferTimeouts } },
  })
  t.teardown(() => server.close())
  const [pool] = (await server.json<Array<{ id: string }>>('/rest/v0/pools?fields=id')).body
  const srs = (await server.json<Array<{ id: string; content_type: string; shared: boolean }>>('/rest/v0/srs?fields=id,content_type,shared')).body
  const sr = srs.find((candidate) => candidate.content_type === 'user' && candidate.shared)
  if (pool === undefined || sr === undefined) throw new Error('the demo lab has a pool and a shared user SR')
  const disk = testDisk(SIZE, [0, 2], 1)
  const created = await server.json<{ id: string }>(`/rest/v0/srs/${sr.id}/vdis?name_label=kept`, { method: 'POST', body: await vhdOf(disk) })
  if (created.status !== 201) throw new Error(`the VDI was not made: ${created.status}`)
  return { xapi, server, pool: pool.id, sr: sr.id, vdi: created.body.id, content: rawOf(disk), spoolDir }
}

const stall = async (xapi: RunningSimulator, on: boolean): Promise<void> => {
  const response = await fetch(`${xapi.url}/simulator/faults`, { method: 'POST', headers: { authorization: basic('root', PASSWORD) }, body: JSON.stringify({ stall_transfers: on }) })
  if (response.status !== 200) throw new Error(`stall_transfers: ${response.status}`)
}

const footprint = ({ xapi, server, spoolDir }: Setup): Promise<Record<string, unknown>> => xapiFootprint(xapi, server, spoolDir)

/** The answer Keel gives for a host it cannot reach (test/api/xapi-local-sr.test.ts, the member stopped: its connections reset). */
const UNREACHABLE = { error: 'internal server error', code: 'INTERNAL_ERROR', data: { requestId: String } }

t.test('an export whose host never answers: the reference’s 500, as for a host that resets it, no task left; served again once the host answers', async (t) => {
  const env = await setup(t, { response: LIMIT, idle: 0 })
  const { xapi, server, vdi, content } = env
  const before = await footprint(env)
  await stall(xapi, true)
  const refused = await server.json(`/rest/v0/vdis/${vdi}.raw`)
  t.equal(refused.status, 500)
  t.match(refused.body, UNREACHABLE)
  t.same(await footprint(env), before, 'the XAPI task cancelled and destroyed, nothing else changed')
  await stall(xapi, false)
  const served = await server.request(`/rest/v0/vdis/${vdi}.raw`)
  t.equal(served.status, 200)
  t.ok(Buffer.from(await served.arrayBuffer()).equals(content), 'the whole disk')
})

t.test('a host that stays silent past the idle timeout, with no limit on its answer, fails the export the same way', async (t) => {
  const env = await setup(t, { response: 0, idle: LIMIT })
  const before = await footprint(env)
  await stall(env.xapi, true)
  const refused = await env.server.json(`/rest/v0/vdis/${env.vdi}.raw`)
  t.equal(refused.status, 500)
  t.match(refused.body, UNREACHABLE)
  t.same(await footprint(env), before, 'the XAPI task cancelled and destroyed, nothing else changed')
})

t.test('imports whose host never answers: 500, nothing made on the pool, the disk as it was, no task and no spool left', async (t) => {
  const env = await setup(t, { response: LIMIT, idle: LIMIT })
  const { xapi, server, pool, sr, vdi, content } = env
  const disk = testDisk(SIZE, [1], 2)
  const xva = await collect(
    encodeXva(
      {
        vm: { uuid: randomUUID(), name_label: 'never imported', name_description: '', memory_static_max: 2 ** 28, memory_dynamic_max: 2 ** 28, memory_dynamic_min: 2 ** 28, memory_static_min: 2 ** 28, VCPUs_max: 1, VCPUs_at_startup: 1, is_a_template: false, tags: [], other_config: {} },
        disks: [{ uuid: randomUUID(), name_label: 'disk', name_description: '', virtual_size: SIZE, device: 'xvda', userdevice: '0', bootable: true, mode: 'RW' }],
        vifs: [],
      },
      [{ size: disk.size, allocated: disk.allocated, blocks: disk.blocks() }],
    ),
  )
  const before = await footprint(env)
  await stall(xapi, true)

  const newVdi = await server.json(`/rest/v0/srs/${sr}/vdis?name_label=never`, { method: 'POST', body: await vhdOf(disk) })
  t.equal(newVdi.status, 500, 'a new VDI')
  t.match(newVdi.body, UNREACHABLE)
  t.same(await footprint(env), before, 'the VDI made for it destroyed, the task cancelled and destroyed, the spool gone')

  const newVm = await server.json(`/rest/v0/pools/${pool}/vms?sr=${sr}`, { method: 'POST', body: xva })
  t.equal(newVm.status, 500, 'a VM')
  t.match(newVm.body, UNREACHABLE)
  t.same(await footprint(env), before, 'no VM, no VDI, no task, no spool')

  await stall(xapi, false)
  t.ok((await exported(xapi, vdi)).equals(content), 'the disk the pool held before is as it was')
})
