import t from 'tap'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { XoRecord } from '../../src/driver/types.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import type { XvaDescription } from '../../src/formats/xva/description.js'
import { encodeXva } from '../../src/formats/xva/xva-writer.js'
import { collect, rawOf, testDisk, type TestDisk } from '../helpers/disks.js'
import type { TestScope } from '../helpers/lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, startServer, type TestServer } from '../helpers/server.js'
import { followTasks } from '../helpers/tasks.js'
import { exported, xapiFootprint } from '../helpers/xapi-footprint.js'
import { PASSWORD, startSimulator, type RunningSimulator } from '../helpers/xapi-simulator.js'

const SIZE = 3 * BLOCK_SIZE
const MiB = 1024 * 1024

interface Setup {
  readonly xapi: RunningSimulator
  readonly server: TestServer
  /** the pool's id */
  readonly pool: string
  /** a user SR local to a member, not to the master */
  readonly sr: string
  /** the address that member answers on */
  readonly member: string
  /** a shared user SR, served by the master */
  readonly shared: string
  /** where the driver spools uploads: empty once each transfer ends */
  readonly spoolDir: string
}

/** A simulator whose hosts answer on 127.0.0.x, and a Keel server on the XAPI driver connected to its master. */
async function setup(t: TestScope): Promise<Setup> {
  const xapi = await startSimulator(t)
  const spoolDir = mkdtempSync(join(tmpdir(), 'keel-spool-'))
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }))
  const pools = [{ host: xapi.url, username: 'root', password: PASSWORD, allowUnauthorized: false, readOnly: false }]
  const server = await startServer({ config: { driver: { kind: 'xapi' } }, app: { xapi: { allowHttp: true, graceDelay: 0, index: { pollTimeout: 30, retryDelay: 20 }, pools, tempDir: spoolDir } } })
  t.teardown(() => server.close())
  const [pool] = (await server.json<{ id: string; master: string }[]>('/rest/v0/pools?fields=id,master')).body
  const hosts = (await server.json<{ id: string; address: string }[]>('/rest/v0/hosts?fields=id,address')).body
  const srs = (await server.json<{ id: string; content_type: string; shared: boolean; $container: string }[]>('/rest/v0/srs?fields=id,content_type,shared,$container')).body
  const local = srs.find((sr) => sr.content_type === 'user' && !sr.shared && sr.$container !== pool?.master)
  const member = hosts.find((host) => host.id === local?.$container)?.address
  const shared = srs.find((sr) => sr.content_type === 'user' && sr.shared)
  if (pool === undefined || local === undefined || member === undefined || member === new URL(xapi.url).hostname) throw new Error('the demo lab has a user SR local to a member, which answers on an address of its own')
  if (shared === undefined) throw new Error('the demo lab has a shared user SR')
  return { xapi, server, pool: pool.id, sr: local.id, member, shared: shared.id, spoolDir }
}

const vhdOf = async (disk: TestDisk): Promise<Buffer> => collect(encodeVhdStream(planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: randomUUID() }), disk.blocks()))

const raw = async (server: TestServer, path: string): Promise<Buffer> => {
  const response = await server.request(path)
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
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

/** A VM of `disks` as an XVA, from the repository's encoder. */
async function xvaOf(disks: readonly TestDisk[]): Promise<Buffer> {
  const description: XvaDescription = {
    vm: { uuid: randomUUID(), name_label: 'onto a member', name_description: '', memory_static_max: 256 * MiB, memory_dynamic_max: 256 * MiB, memory_dynamic_min: 256 * MiB, memory_static_min: 256 * MiB, VCPUs_max: 1, VCPUs_at_startup: 1, is_a_template: false, tags: [], other_config: {} },
    disks: disks.map((disk, i) => ({ uuid: randomUUID(), name_label: `disk ${i}`, name_description: '', virtual_size: disk.size, device: `xvd${String.fromCharCode(97 + i)}`, userdevice: String(i), bootable: i === 0, mode: 'RW' })),
    vifs: [],
  }
  return collect(encodeXva(description, disks.map((disk) => ({ size: disk.size, allocated: disk.allocated, blocks: disk.blocks() }))))
}

/** The VM's disks (VBD order), each with its SR. */
async function vmDisks(server: TestServer, vm: string): Promise<Array<{ id: string; $SR: string; name_label: string }>> {
  const { $VBDs } = (await server.json<{ $VBDs: string[] }>(`/rest/v0/vms/${vm}`)).body
  const disks = []
  for (const vbd of $VBDs) {
    const { VDI } = (await server.json<{ VDI?: string }>(`/rest/v0/vbds/${vbd}?fields=VDI`)).body
    if (VDI !== undefined) disks.push((await server.json<{ id: string; $SR: string; name_label: string }>(`/rest/v0/vdis/${VDI}?fields=id,$SR,name_label`)).body)
  }
  return disks.sort((a, b) => a.name_label.localeCompare(b.name_label))
}

/** What an import could leave behind: what any transfer could (xapiFootprint), and the SR's files. */
async function footprint({ xapi, server, sr, spoolDir }: Setup): Promise<Record<string, unknown>> {
  return { ...(await xapiFootprint(xapi, server, spoolDir)), files: readdirSync(join(xapi.dataDir, 'srs', sr)).sort() }
}

/** Keel's VM import tasks, their status and error code. */
async function importTasks(server: TestServer): Promise<Array<{ status: string; code: unknown }>> {
  const tasks = (await server.json<Array<{ properties: { name?: string }; status: string; result?: { code?: unknown } }>>('/rest/v0/tasks?fields=properties,status,result')).body
  return tasks.filter((task) => task.properties.name === 'REST API: import VM (xva)').map((task) => ({ status: task.status, code: task.result?.code }))
}

t.test('a VM imported onto a member’s local SR through the XAPI driver: 201, its disks on that SR, read back byte for byte', async (t) => {
  const env = await setup(t)
  const { server, pool, sr } = env
  const disks = [testDisk(SIZE, [0, 2], 4), testDisk(2 * BLOCK_SIZE, [1], 5)]
  const xva = await xvaOf(disks)
  const imported = await server.json<{ id: string }>(`/rest/v0/pools/${pool}/vms?sr=${sr}`, { method: 'POST', body: xva })
  t.equal(imported.status, 201, JSON.stringify(imported.body))
  t.equal(imported.response.headers.get('location'), `/rest/v0/vms/${imported.body.id}`)
  const vm = (await server.json<XoRecord>(`/rest/v0/vms/${imported.body.id}?fields=name_label,power_state`)).body
  t.match(vm, { name_label: 'onto a member', power_state: 'Halted' })
  const copies = await vmDisks(server, imported.body.id)
  t.equal(copies.length, 2, 'both disks')
  for (const [i, copy] of copies.entries()) {
    t.equal(copy.$SR, sr, `disk ${i} is on the member’s SR`)
    t.ok((await raw(server, `/rest/v0/vdis/${copy.id}.raw`)).equals(rawOf(disks[i] as TestDisk)), `disk ${i} reads back`)
  }
  t.match(await footprint(env), { poolTasks: [], spooled: [] }, 'no XAPI task left, the spools and the XVA written for the upload gone')
  t.same(await importTasks(server), [{ status: 'success', code: undefined }], 'Keel’s task succeeded')
})

t.test('the member stopped: the import refused as the reference refuses it, nothing made on the pool, Keel’s task failed', async (t) => {
  const env = await setup(t)
  const { xapi, server, pool, sr, member, shared } = env
  const xva = await xvaOf([testDisk(SIZE, [0, 2], 6)])
  const before = await footprint(env)
  t.ok((before['files'] as string[]).length > 0, 'the SR holds disks before')
  const stopped = await fetch(`${xapi.url}/simulator/faults`, { method: 'POST', headers: { authorization: basic('root', PASSWORD) }, body: JSON.stringify({ stop_member: member }) })
  t.equal(stopped.status, 200)

  const refused = await server.json<{ error: string; code: string; data: { requestId: string } }>(`/rest/v0/pools/${pool}/vms?sr=${sr}`, { method: 'POST', body: xva })
  t.equal(refused.status, 500, 'a host no one reaches: the reference’s 500')
  t.match(refused.body, { error: 'internal server error', code: 'INTERNAL_ERROR', data: { requestId: String } })
  t.same(await footprint(env), before, 'no VM, no VDI, no file, no task left on the pool; nothing new in Keel')
  t.same(await importTasks(server), [{ status: 'failure', code: 'INTERNAL_ERROR' }], 'Keel’s task failed')

  const elsewhere = await server.json<{ id: string }>(`/rest/v0/pools/${pool}/vms?sr=${shared}`, { method: 'POST', body: xva })
  t.equal(elsewhere.status, 201, 'the same archive onto a shared SR: the master answers, only the stopped member’s SR is out of reach')
})

t.test('a VM import onto a member’s local SR cut by its client mid-body: nothing made', async (t) => {
  const env = await setup(t)
  const { server, pool, sr } = env
  const xva = await xvaOf([testDisk(SIZE, [0, 1, 2], 7)])
  const before = await footprint(env)
  const tasks = await followTasks(server)
  t.teardown(() => tasks.close())
  const cut = new Promise<void>((resolve, reject) => {
    const req = request(`${server.url}/rest/v0/pools/${pool}/vms?sr=${sr}`, { method: 'POST', headers: { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD), 'content-length': xva.length } })
    req.on('response', (res) => {
      res.resume()
      reject(new Error(`answered ${res.statusCode ?? 0} to a body that never came whole`))
    })
    req.on('error', () => resolve())
    req.write(xva.subarray(0, Math.floor(xva.length / 2)), () => req.destroy(new Error('the client went away')))
  })
  await cut
  await tasks.ended(1)
  t.same(await footprint(env), before, 'no VM, no VDI, no file, no task left on the pool; nothing new in Keel')
  t.same(await importTasks(server), [{ status: 'failure', code: 'INVALID_DISK_STREAM' }], 'Keel’s task failed')
})
