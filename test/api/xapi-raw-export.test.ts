import t from 'tap'
import { randomUUID } from 'node:crypto'
import { request, type IncomingMessage } from 'node:http'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, rawOf, testDisk, type TestDisk } from '../helpers/disks.js'
import type { TestScope } from '../helpers/lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, startServer, type TestServer } from '../helpers/server.js'
import { followTasks } from '../helpers/tasks.js'
import { PASSWORD, startSimulator, type RunningSimulator } from '../helpers/xapi-simulator.js'

// Raw exports through Keel on the XAPI driver (issue 28): one transfer per export, its XAPI task ended
// after the response's last byte, whatever way the export ends. Runs on the XAPI driver whatever
// KEEL_TEST_DRIVER says (as xapi-local-sr.test.ts).

interface Setup {
  readonly xapi: RunningSimulator
  readonly server: TestServer
  readonly disk: TestDisk
  /** the VDI holding `disk`, on a shared SR */
  readonly vdi: string
  /** the pool's tasks, once the driver has ended those of the reads that ended */
  tasksLeft(): Promise<string[]>
}

async function setup(t: TestScope, disk: TestDisk): Promise<Setup> {
  const xapi = await startSimulator(t)
  const pools = [{ host: xapi.url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }]
  const server = await startServer({ config: { driver: { kind: 'xapi' } }, app: { xapi: { allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools } } })
  t.teardown(() => server.close())
  const srs = (await server.json<Array<{ id: string; content_type: string; shared: boolean }>>('/rest/v0/srs?fields=id,content_type,shared')).body
  const sr = srs.find((candidate) => candidate.content_type === 'user' && candidate.shared)
  if (sr === undefined) throw new Error('the demo lab has a shared user SR')
  const vhd = await collect(encodeVhdStream(planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: randomUUID() }), disk.blocks()))
  const created = await server.json<{ id: string }>(`/rest/v0/srs/${sr.id}/vdis?name_label=exported`, { method: 'POST', body: vhd })
  if (created.status !== 201) throw new Error(`the VDI was not created: ${created.status}`)
  const session = await xapi.login()
  const tasksLeft = async (): Promise<string[]> => {
    await server.app.xapi?.disks.settled()
    return xapi.call<string[]>('task.get_all', [session])
  }
  return { xapi, server, disk, vdi: created.body.id, tasksLeft }
}

/** A GET on Keel read to its end or its cut: the status, the headers, the bytes, and whether the body came whole. */
function download(server: TestServer, path: string, headers: Record<string, string> = {}): Promise<{ response: IncomingMessage; body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, { headers: { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD), ...headers } }, (response) => {
      const parts: Buffer[] = []
      response.on('data', (chunk: Buffer) => parts.push(chunk))
      response.on('error', () => undefined)
      response.on('close', () => resolve({ response, body: Buffer.concat(parts), complete: response.complete }))
    })
    req.on('error', reject)
    req.end()
  })
}

const SIZE = 8 * BLOCK_SIZE

t.test('raw exports over XAPI: exact bytes, ranges, a refused range, and no task left after several', async (t) => {
  const env = await setup(t, testDisk(SIZE, [1, 4, 6], 3))
  const raw = rawOf(env.disk)
  t.same(await env.tasksLeft(), [], 'no task before')
  for (let i = 0; i < 5; i++) {
    const whole = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`)
    t.equal(whole.response.statusCode, 200)
    t.equal(whole.response.headers['content-length'], String(SIZE))
    t.ok(whole.complete && whole.body.equals(raw), `export ${i + 1}: the disk byte for byte`)
  }
  t.same(await env.tasksLeft(), [], 'five exports leave no task on the pool')

  const start = 5 * BLOCK_SIZE + 1000
  const tail = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`, { range: `bytes=${start}-` })
  t.equal(tail.response.statusCode, 206)
  t.equal(tail.response.headers['content-range'], `bytes ${start}-${SIZE - 1}/${SIZE}`)
  t.ok(tail.body.equals(raw.subarray(start)), 'a range deep in the disk')
  const inner = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`, { range: `bytes=${BLOCK_SIZE - 10}-${BLOCK_SIZE + 9}` })
  t.equal(inner.response.statusCode, 206)
  t.ok(inner.body.equals(raw.subarray(BLOCK_SIZE - 10, BLOCK_SIZE + 10)), 'a range across a block boundary')
  const hole = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`, { range: `bytes=${2 * BLOCK_SIZE}-${3 * BLOCK_SIZE}` })
  t.equal(hole.response.statusCode, 206)
  t.ok(hole.body.equals(Buffer.alloc(BLOCK_SIZE + 1)), 'a range over a hole and the first byte of the next one')

  const refused = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`, { range: `bytes=${SIZE}-` })
  t.equal(refused.response.statusCode, 416)
  t.equal(refused.response.headers['content-range'], `bytes */${SIZE}`)
  t.match(JSON.parse(refused.body.toString()), { code: 'RANGE_NOT_SATISFIABLE', data: { range: `bytes=${SIZE}-`, size: SIZE } })
  t.same(await env.tasksLeft(), [], 'no task left by the ranges, none made for the refusal')
  const again = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`)
  t.ok(again.body.equals(raw), 'the disk is as it was')
})

t.test('a client gone mid-export: the export stops and its XAPI task ends', async (t) => {
  // Larger than the loopback's socket buffers, so that the export cannot be written whole to a client that reads nothing.
  const env = await setup(t, testDisk(16 * BLOCK_SIZE, [0, 3, 5, 8, 9, 10, 11, 12, 13, 14, 15], 4))
  const tasks = await followTasks(env.server)
  t.teardown(() => tasks.close())
  await new Promise<void>((resolve, reject) => {
    const req = request(`${env.server.url}/rest/v0/vdis/${env.vdi}.raw`, { headers: { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) } }, (response) => {
      t.equal(response.statusCode, 200, 'the export started')
      req.destroy()
      resolve()
    })
    req.on('error', (error) => (req.destroyed ? undefined : reject(error)))
    req.end()
  })
  await tasks.ended(1)
  const [exported] = (await env.server.json<Array<{ status: string; properties: { name: string } }>>('/rest/v0/tasks?fields=status,properties')).body.filter((task) => task.properties.name.startsWith('REST API: export'))
  t.equal(exported?.status, 'failure', 'Keel’s task says the export did not complete')
  t.same(await env.tasksLeft(), [], 'no task left on the pool')
  const whole = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`)
  t.ok(whole.body.equals(rawOf(env.disk)), 'a later export is whole')
})

t.test('the pool resetting the connection mid-export cuts the client’s response, never completes it with wrong bytes', async (t) => {
  // Cut deep in the stream: what Keel holds unread (its read-ahead and the sockets' buffers) is a few blocks, so by then the
  // response has started. A reset before its first byte is an ordinary error answer instead.
  const size = 16 * BLOCK_SIZE
  const env = await setup(t, testDisk(size, [0, 1, 2, 3, 4, 5, 7, 8, 10, 11, 12, 13, 14, 15], 5))
  const fault = await fetch(`${env.xapi.url}/simulator/faults`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`root:${PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reset_next_export_after: 12 * BLOCK_SIZE }),
  })
  t.equal(fault.status, 200)
  const raw = rawOf(env.disk)
  const cut = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`)
  t.equal(cut.response.statusCode, 200, 'the export had started')
  t.equal(cut.response.headers['content-length'], String(size))
  t.notOk(cut.complete, 'the response is cut')
  t.ok(cut.body.length < size, `short of its length (${cut.body.length} of ${size} bytes)`)
  t.ok(cut.body.equals(raw.subarray(0, cut.body.length)), 'what came is the disk’s beginning')
  t.same(await env.tasksLeft(), [], 'no task left on the pool')
  const whole = await download(env.server, `/rest/v0/vdis/${env.vdi}.raw`)
  t.ok(whole.complete && whole.body.equals(rawOf(env.disk)), 'the next export is whole')
})
