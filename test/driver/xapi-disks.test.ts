import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { exportRaw } from '../../src/disks/export.js'
import { describeVm } from '../../src/disks/xva.js'
import type { DiskAccess, XoRecord } from '../../src/driver/types.js'
import { XapiDisks } from '../../src/driver/xapi/disks.js'
import { XapiOperations } from '../../src/driver/xapi/operations.js'
import type { XapiLocator, XapiPool } from '../../src/driver/xapi/types.js'
import { BLOCK_SIZE, isZero } from '../../src/formats/blocks.js'
import { setSector } from '../../src/formats/vhd/bitmap.js'
import { BITMAP_SIZE, SECTOR_SIZE } from '../../src/formats/vhd/constants.js'
import { collect, drain, patternBlock, VPC_OPTS } from '../helpers/disks.js'
import { context, type TestScope } from '../helpers/lab.js'
import { PASSWORD, simulatedPool, type SimulatedPool } from '../helpers/xapi-pool.js'
import { failure } from './fixtures/lab.js'

const SIZE = 5 * BLOCK_SIZE + 3 * SECTOR_SIZE

interface Setup extends SimulatedPool {
  readonly disks: DiskAccess
  /** the simulator's own disk access, to compare with */
  readonly lab: DiskAccess
  readonly spoolDir: string
  readonly sr: XoRecord
  named(type: string, name: string): XoRecord
  /** a new VDI on the shared SR holding `blocks`, made through the driver */
  vdi(blocks: ReadonlyMap<number, Buffer>, size?: number): Promise<XoRecord>
  /** the content of a VDI as the lab reads it, block by block */
  content(vdi: XoRecord): Promise<Map<number, Buffer>>
  /** the pool's tasks once the reads that ended have ended theirs */
  tasksLeft(): Promise<string[]>
}

async function setup(t: TestScope): Promise<Setup> {
  const sim = await simulatedPool(t)
  const spoolDir = mkdtempSync(join(tmpdir(), 'keel-xapi-disks-'))
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }))
  const { driver } = sim.sim.simulator.services
  const lab = driver.disks
  if (lab === undefined) throw new Error('the simulator serves no disks')
  const xapiDisks = new XapiDisks(sim.locator, sim.index, { tempDir: spoolDir })
  const disks: DiskAccess = xapiDisks
  const named = (type: string, name: string): XoRecord => {
    const record = [...driver.objectsOfType(type)].find((candidate) => candidate['name_label'] === name)
    if (record === undefined) throw new Error(`no ${type} named ${name}`)
    return record
  }
  const sr = named('SR', 'NFS shared storage')
  return {
    ...sim,
    disks,
    lab,
    spoolDir,
    sr,
    named,
    vdi: async (blocks, size = SIZE) => {
      const session = await disks.importVdi(sr, { name_label: 'scratch', name_description: '', size }, 'user')
      for (const [index, data] of blocks) await session.write(0, { index, data })
      return sim.record((await session.commit()).id)
    },
    tasksLeft: async () => {
      await xapiDisks.settled()
      return sim.refs('task')
    },
    content: async (vdi) => {
      const allocated = await lab.allocation(vdi)
      const out = new Map<number, Buffer>()
      for await (const block of lab.readBlocks(vdi, allocated)) if (!isZero(block.data)) out.set(block.index, Buffer.from(block.data))
      return out
    },
  }
}

const blocks = (entries: Array<[number, number]>): Map<number, Buffer> => new Map(entries.map(([index, seed]) => [index, patternBlock(seed)]))

t.test('allocation and reads come from one VHD export and equal the lab’s disk, which qemu-img reads the same', async (t) => {
  const env = await setup(t)
  const written = blocks([
    [0, 1],
    [2, 2],
    [5, 3],
  ])
  const vdi = await env.vdi(written)
  t.same(await env.disks.allocation(vdi), await env.lab.allocation(vdi), 'the allocation is the lab’s')
  t.same(await env.disks.allocation(vdi), [0, 2, 5])
  const read = await drain(env.disks.readBlocks(vdi, [0, 1, 2, 4, 5]))
  t.same(read.map((block) => block.index), [0, 1, 2, 4, 5], 'every block asked, in order')
  for (const block of read) {
    const expected = written.get(block.index)
    if (block.index === 5) t.ok(block.data.subarray(0, 3 * SECTOR_SIZE).equals((expected as Buffer).subarray(0, 3 * SECTOR_SIZE)), 'the last, short block')
    else t.ok(expected === undefined ? isZero(block.data) : block.data.equals(expected), `block ${block.index}`)
  }

  const file = join(env.sim.dataDir, 'srs', env.sr.id, `${vdi.id}.vhd`)
  t.ok(existsSync(file), 'the lab keeps the disk in one VHD file')
  const dir = mkdtempSync(join(tmpdir(), 'keel-xapi-qemu-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  await promisify(execFile)('qemu-img', ['convert', '--image-opts', VPC_OPTS(file), '-O', 'raw', join(dir, 'disk.raw')])
  const raw = readFileSync(join(dir, 'disk.raw'))
  t.equal(raw.length, SIZE)
  const all = await drain(env.disks.readBlocks(vdi, [0, 1, 2, 3, 4, 5]))
  t.ok(Buffer.concat(all.map((block) => block.data)).subarray(0, SIZE).equals(raw), 'the driver reads what qemu-img reads in the lab’s file')
  t.same(await env.tasksLeft(), [], 'every transfer task destroyed')
})

t.test('a disk on another host’s local storage is read where XAPI sends the request', async (t) => {
  const env = await setup(t)
  const local = env.named('SR', 'Local storage (xcp-ng-02)')
  const vdi = [...env.sim.simulator.services.driver.objectsOfType('VDI')].find((candidate) => candidate['$SR'] === local.id)
  if (vdi === undefined) throw new Error('no disk on xcp-ng-02')
  const allocated = await env.disks.allocation(vdi)
  t.ok(allocated.length > 0, 'the disk holds data')
  t.same(allocated, await env.lab.allocation(vdi))
  const read = await drain(env.disks.readBlocks(vdi, allocated.slice(0, 2)))
  const expected = await drain(env.lab.readBlocks(vdi, allocated.slice(0, 2)))
  t.same(read.map((block) => block.index), expected.map((block) => block.index))
  t.ok(read.every((block, i) => block.data.equals(expected[i]?.data as Buffer)), 'the same bytes')
  t.same(await env.tasksLeft(), [])
})

t.test('a read that stops early and a read of nothing leave no task behind', async (t) => {
  const env = await setup(t)
  const vdi = await env.vdi(blocks([
    [0, 1],
    [3, 2],
  ]))
  for await (const block of env.disks.readBlocks(vdi, [0, 3])) {
    t.equal(block.index, 0)
    break
  }
  t.same(await drain(env.disks.readBlocks(vdi, [])), [])
  const only = await drain(env.disks.readBlocks(vdi, [3]))
  t.ok(only[0]?.data.equals(patternBlock(2)))
  t.same(await env.tasksLeft(), [])
})

t.test('changedBlocks: the blocks written since a snapshot', async (t) => {
  const env = await setup(t)
  const vm = env.named('VM', 'staging-app')
  const vmRecord = env.xapi(String(vm['_xapiRef']))
  const vdiRef = (vmRecord['VBDs'] as string[]).map((ref) => env.xapi(ref)).find((vbd) => vbd['type'] === 'Disk')?.['VDI']
  const vdi = env.sim.simulator.services.feed.labRecord(String(vdiRef)) as XoRecord
  const ops = new XapiOperations(env.locator, env.index)
  const snapshot = env.record((await ops.perform(vm, 'snapshot', {}, context()))?.id ?? '')
  const snapshotVdiRef = (env.xapi(String(snapshot['_xapiRef']))['VBDs'] as string[]).map((ref) => env.xapi(ref)).find((vbd) => vbd['type'] === 'Disk')?.['VDI']
  const base = env.sim.simulator.services.feed.labRecord(String(snapshotVdiRef)) as XoRecord
  t.same(await env.disks.changedBlocks(vdi, base), [], 'nothing changed yet')
  const session = await env.disks.openWrite(vdi, { patch: true })
  await session.write({ index: 1, data: patternBlock(9) })
  await session.commit()
  t.same(await env.disks.changedBlocks(env.record(vdi.id), base), await env.lab.changedBlocks(env.record(vdi.id), base))
  t.ok((await env.disks.changedBlocks(env.record(vdi.id), base)).includes(1))
  t.same(await env.tasksLeft(), [])
})

t.test('openWrite replaces the content at commit, patches it when asked, and changes nothing on abort', async (t) => {
  const env = await setup(t)
  const vdi = await env.vdi(blocks([
    [0, 1],
    [2, 2],
  ]))
  const aborted = await env.disks.openWrite(vdi)
  await aborted.write({ index: 4, data: patternBlock(4) })
  await aborted.abort()
  t.same([...(await env.content(vdi)).keys()], [0, 2], 'an aborted session changes nothing')
  t.same(readdirSync(env.spoolDir), [], 'and leaves no file')

  const replace = await env.disks.openWrite(vdi)
  await replace.write({ index: 3, data: patternBlock(7) })
  await replace.write({ index: 4, data: patternBlock(8) })
  t.same([...(await env.content(vdi)).keys()], [0, 2], 'nothing changes before the commit')
  await replace.commit()
  const replaced = await env.content(env.record(vdi.id))
  t.same([...replaced.keys()], [3, 4], 'the content replaced whole')
  t.ok(replaced.get(3)?.equals(patternBlock(7)))

  const patch = await env.disks.openWrite(env.record(vdi.id), { patch: true })
  const bitmap = Buffer.alloc(BITMAP_SIZE)
  setSector(bitmap, 0)
  await patch.write({ index: 3, data: patternBlock(11), bitmap })
  await patch.write({ index: 1, data: patternBlock(12) })
  await patch.commit()
  const patched = await env.content(env.record(vdi.id))
  t.same([...patched.keys()].sort(), [1, 3, 4], 'a patch keeps the blocks not written')
  const mixed = Buffer.from(patternBlock(7))
  patternBlock(11).copy(mixed, 0, 0, SECTOR_SIZE)
  t.ok(patched.get(3)?.equals(mixed), 'a partial block changes only its sectors')
  t.same(readdirSync(env.spoolDir), [])
  t.same(await env.tasksLeft(), [])
})

t.test('importVdi creates the VDI only at commit; an abort or a failed commit leaves nothing', async (t) => {
  const env = await setup(t)
  const before = env.refs('VDI').length
  const aborted = await env.disks.importVdi(env.sr, { name_label: 'never', name_description: '', size: SIZE }, 'user')
  await aborted.write(0, { index: 0, data: patternBlock(1) })
  await aborted.abort()
  t.equal(env.refs('VDI').length, before)

  const broken = await env.disks.importVdi(env.sr, { name_label: 'broken', name_description: '', size: SIZE }, 'user')
  await broken.write(0, { index: 40, data: patternBlock(1) })
  await t.rejects(broken.commit())
  t.equal(env.refs('VDI').length, before, 'the VDI made for a content that could not be sent is destroyed')

  const session = await env.disks.importVdi(env.sr, { name_label: 'imported', name_description: 'd', size: SIZE }, 'user')
  await session.write(0, { index: 1, data: patternBlock(5) })
  const made = await session.commit()
  t.equal(made.type, 'VDI')
  const vdi = env.record(made.id)
  t.match(vdi, { name_label: 'imported', name_description: 'd', size: SIZE, $SR: env.sr.id })
  t.same([...(await env.content(vdi)).entries()], [[1, patternBlock(5)]], 'landed byte for byte')
  t.same(readdirSync(env.spoolDir), [])
  t.same(await env.tasksLeft(), [])
})

t.test('importVm sends an XVA: a new halted VM with its disks', async (t) => {
  const env = await setup(t)
  const source = env.named('VM', 'staging-app')
  const { driver } = env.sim.simulator.services
  const { description, vdis } = describeVm(source, (id) => driver.getObject(id))
  const session = await env.disks.importVm(env.sr, description, 'user')
  const expected: Array<Map<number, Buffer>> = []
  for (const [i, vdi] of vdis.entries()) {
    expected.push(await env.content(vdi))
    for await (const block of env.lab.readBlocks(vdi, await env.lab.allocation(vdi))) await session.write(i, { index: block.index, data: Buffer.from(block.data) })
  }
  const made = await session.commit()
  t.equal(made.type, 'VM')
  const vm = env.record(made.id)
  t.match(vm, { name_label: source['name_label'], power_state: 'Halted' })
  const copies = describeVm(vm, (id) => driver.getObject(id)).vdis
  t.equal(copies.length, vdis.length)
  for (const [i, copy] of copies.entries()) t.same([...(await env.content(copy)).entries()], [...(expected[i] as Map<number, Buffer>).entries()], `disk ${i} landed byte for byte`)
  t.same(readdirSync(env.spoolDir), [])
  t.same(await env.tasksLeft(), [])

  const before = env.refs('VM').length
  const aborted = await env.disks.importVm(env.sr, description, 'user')
  await aborted.abort()
  t.equal(env.refs('VM').length, before, 'an aborted import makes nothing')
  t.same(readdirSync(env.spoolDir), [])
})

t.test('a connection reset mid-export fails the read with the task’s failure; unknown objects are 404', async (t) => {
  const env = await setup(t)
  const vdi = await env.vdi(blocks([
    [0, 1],
    [1, 2],
    [2, 3],
  ]))
  const fault = await fetch(`${env.sim.url}/simulator/faults`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`root:${PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reset_next_export_after: 3 * BLOCK_SIZE }),
  })
  t.equal(fault.status, 200)
  const error = await failure(drain(env.disks.readBlocks(vdi, [0, 1, 2])))
  // The task's failure, not the socket's: the simulator words it VDI_IO_ERROR or, when its pipeline notices the reset first, INTERNAL_ERROR.
  t.equal(error.code, 'XAPI_ERROR')
  t.match(error.data, { code: /^(VDI_IO_ERROR|INTERNAL_ERROR)$/, params: Array })
  t.same(await env.tasksLeft(), [])
  const ghost = { ...vdi, _xapiRef: 'OpaqueRef:nowhere' }
  t.same([(await failure(env.disks.allocation(ghost))).code], ['NO_SUCH_OBJECT'])
})

/** The driver's disks over the same pool, each call and handler request it makes named in `calls`. */
function counted(env: Setup): { disks: XapiDisks; calls: string[] } {
  const calls: string[] = []
  const pool: XapiPool = {
    ...env.pool,
    call: <T>(method: string, params: readonly unknown[]) => {
      calls.push(method)
      return env.pool.call<T>(method, params)
    },
    request: (request) => {
      calls.push(`${request.method} ${request.path}`)
      return env.pool.request(request)
    },
  }
  const locator: XapiLocator = {
    locate: (record) => {
      const location = env.locator.locate(record)
      return location === undefined ? undefined : { ...location, pool }
    },
    recordOf: (of, ref) => env.locator.recordOf(of, ref),
  }
  return { disks: new XapiDisks(locator, env.index, { tempDir: env.spoolDir }), calls }
}

t.test('a raw export is one transfer: four calls to the pool where the allocation and the blocks took eight, its task ended after the last byte', async (t) => {
  const env = await setup(t)
  const vdi = await env.vdi(blocks([
    [1, 1],
    [3, 2],
  ]))
  const { disks, calls } = counted(env)
  await drain(disks.readBlocks(vdi, await disks.allocation(vdi)))
  await disks.settled()
  t.same(calls, ['task.create', 'GET /export_raw_vdi', 'task.cancel', 'task.destroy', 'task.create', 'GET /export_raw_vdi', 'task.cancel', 'task.destroy'], 'the allocation and the blocks apart: two transfers')

  calls.length = 0
  const stream = await exportRaw(disks, vdi, SIZE, { concurrency: 1, now: 0 })
  const bytes = await collect(stream.bytes)
  calls.push('the stream ended')
  await disks.settled()
  t.same(calls, ['task.create', 'GET /export_raw_vdi', 'task.cancel', 'the stream ended', 'task.destroy'], 'one transfer, ended without the stream waiting for it')
  t.ok(bytes.equals(await collect((await exportRaw(env.lab, vdi, SIZE, { concurrency: 1, now: 0 })).bytes)), 'the lab’s raw export, byte for byte')
  t.same(await env.tasksLeft(), [])

  calls.length = 0
  const range = { start: 3 * BLOCK_SIZE + 7, end: 3 * BLOCK_SIZE + 700 }
  const ranged = await exportRaw(disks, vdi, SIZE, { concurrency: 1, now: 0 }, range)
  t.equal(ranged.length, 693)
  t.ok((await collect(ranged.bytes)).equals(patternBlock(2).subarray(7, 700)), 'a range in the last allocated block')
  await disks.settled()
  t.same(calls, ['task.create', 'GET /export_raw_vdi', 'task.cancel', 'task.destroy'], 'one transfer for a range too')
})

t.test('openRead: the allocation first, then the blocks from the same stream; a read closed unread or never iterated leaves no task', async (t) => {
  const env = await setup(t)
  const written = blocks([
    [0, 1],
    [4, 2],
  ])
  const vdi = await env.vdi(written)
  const { disks, calls } = counted(env)
  const left = async (): Promise<string[]> => {
    await disks.settled()
    return env.refs('task')
  }
  const read = await disks.openRead(vdi)
  t.same(read.allocated, await env.lab.allocation(vdi))
  const got = await drain(read.blocks([0, 2, 4]))
  t.same(got.map((block) => block.index), [0, 2, 4])
  t.ok(got[0]?.data.equals(written.get(0) as Buffer) && got[2]?.data.equals(written.get(4) as Buffer) && isZero(got[1]?.data ?? Buffer.alloc(1, 1)), 'the blocks asked, zeros for a hole')
  await read.close()
  t.same(await left(), [])

  const unread = await disks.openRead(vdi)
  await unread.close()
  t.same(await left(), [], 'closed without reading')
  const handed = await disks.openRead(vdi)
  const never = handed.blocks([4])
  await handed.close()
  t.same(await left(), [], 'its blocks handed out, never iterated, then closed')
  await t.rejects(drain(never), { message: 'the read is closed' })
  t.equal(calls.filter((call) => call === 'GET /export_raw_vdi').length, 3, 'one transfer per read')
})
