import t from 'tap'
import { randomUUID } from 'node:crypto'
import type { XoRecord } from '../../src/driver/types.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, rawOf, testDisk, type TestDisk } from '../helpers/disks.js'
import type { TestScope } from '../helpers/lab.js'
import { startServer, type TestServer } from '../helpers/server.js'
import { PASSWORD, startSimulator, type RunningSimulator } from '../helpers/xapi-simulator.js'

const SIZE = 3 * BLOCK_SIZE

interface Setup {
  readonly xapi: RunningSimulator
  readonly server: TestServer
  /** a user SR local to a member, not to the master */
  readonly sr: string
}

/** A simulator whose hosts answer on 127.0.0.x, and a Keel server on the XAPI driver connected to its master. */
async function setup(t: TestScope): Promise<Setup> {
  const xapi = await startSimulator(t)
  const pools = [{ host: xapi.url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }]
  const server = await startServer({ config: { driver: { kind: 'xapi' } }, app: { xapi: { allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools } } })
  t.teardown(() => server.close())
  const [pool] = (await server.json<{ id: string; master: string }[]>('/rest/v0/pools?fields=id,master')).body
  const hosts = (await server.json<{ id: string; address: string }[]>('/rest/v0/hosts?fields=id,address')).body
  const srs = (await server.json<{ id: string; content_type: string; shared: boolean; $container: string }[]>('/rest/v0/srs?fields=id,content_type,shared,$container')).body
  const local = srs.find((sr) => sr.content_type === 'user' && !sr.shared && sr.$container !== pool?.master)
  const member = hosts.find((host) => host.id === local?.$container)?.address
  if (pool === undefined || local === undefined || member === undefined || member === new URL(xapi.url).hostname) throw new Error('the demo lab has a user SR local to a member, which answers on an address of its own')
  return { xapi, server, sr: local.id }
}

const vhdOf = async (disk: TestDisk): Promise<Buffer> => collect(encodeVhdStream(planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: randomUUID() }), disk.blocks()))

const raw = async (server: TestServer, path: string): Promise<Buffer> => {
  const response = await server.request(path)
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return Buffer.from(await response.arrayBuffer())
}

/** A VDI's content as the simulator's own `/export_raw_vdi` sends it (asked of the master, its redirect followed). */
async function exported(xapi: RunningSimulator, vdi: string): Promise<Buffer> {
  const session = await xapi.login()
  const response = await fetch(`${xapi.url}/export_raw_vdi?session_id=${session}&vdi=${vdi}&format=raw`)
  if (response.status !== 200) throw new Error(`export_raw_vdi: ${response.status}`)
  return Buffer.from(await response.arrayBuffer())
}

t.test('a VDI on a member’s local SR: imported, uploaded raw and VHD through the XAPI driver, read back byte for byte', async (t) => {
  const { xapi, server, sr } = await setup(t)
  const first = testDisk(SIZE, [0, 2], 1)
  const created = await server.json<{ id: string }>(`/rest/v0/srs/${sr}/vdis?name_label=on-a-member`, { method: 'POST', body: await vhdOf(first) })
  t.equal(created.status, 201, 'a new VDI imported onto the SR')
  const vdi = created.body.id
  t.equal((await server.json<XoRecord>(`/rest/v0/vdis/${vdi}`)).body['$SR'], sr)
  t.ok((await raw(server, `/rest/v0/vdis/${vdi}.raw`)).equals(rawOf(first)), 'its content reads back')

  const second = testDisk(SIZE, [1], 2)
  t.equal((await server.request(`/rest/v0/vdis/${vdi}.raw`, { method: 'PUT', body: rawOf(second) })).status, 204, 'a raw upload')
  t.ok((await raw(server, `/rest/v0/vdis/${vdi}.raw`)).equals(rawOf(second)), 'reads back through Keel')
  t.ok((await exported(xapi, vdi)).equals(rawOf(second)), 'and through the simulator’s own export')

  const third = testDisk(SIZE, [0, 1, 2], 3)
  t.equal((await server.request(`/rest/v0/vdis/${vdi}.vhd`, { method: 'PUT', body: await vhdOf(third) })).status, 204, 'a VHD upload')
  t.ok((await raw(server, `/rest/v0/vdis/${vdi}.raw`)).equals(rawOf(third)), 'reads back through Keel')
  t.ok((await exported(xapi, vdi)).equals(rawOf(third)), 'and through the simulator’s own export')
})
