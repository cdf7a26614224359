import t from 'tap'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, patternBlock, rawOf, run, tempDir, testDisk } from '../helpers/disks.js'
import { demoIds, type DemoIds } from '../helpers/demo-lab.js'
import { request } from 'node:http'
import { basic, jsonBody, startServer, ADMIN_EMAIL, ADMIN_PASSWORD, type TestServer } from '../helpers/server.js'
import { followTasks } from '../helpers/tasks.js'

const ADMIN = basic(ADMIN_EMAIL, ADMIN_PASSWORD)

const MiB = 1024 * 1024
const DISK_SIZE = 64 * MiB
const PY = '/usr/bin/python3'

interface Disk {
  readonly id: string
  readonly size: number
  readonly $SR: string
  readonly usage: number
}

async function bytesOf(server: TestServer, path: string): Promise<Buffer> {
  const response = await server.request(path)
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return Buffer.from(await response.arrayBuffer())
}

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

async function vmDisks(server: TestServer, vmId: string, collection = 'vms'): Promise<Disk[]> {
  const vm = await server.json<{ $VBDs: string[] }>(`/rest/v0/${collection}/${vmId}`)
  const disks: Disk[] = []
  for (const vbdId of vm.body.$VBDs) {
    const vbd = await server.json<{ VDI?: string; is_cd_drive: boolean; position: string }>(`/rest/v0/vbds/${vbdId}`)
    if (vbd.body.is_cd_drive || vbd.body.VDI === undefined) continue
    const type = collection === 'vms' ? 'vdis' : 'vdi-snapshots'
    disks.push((await server.json<Disk>(`/rest/v0/${type}/${vbd.body.VDI}`)).body)
  }
  return disks
}

async function action(server: TestServer, path: string, body: unknown = {}): Promise<{ id: string }> {
  const response = await server.json<{ id: string }>(`${path}?sync=true`, jsonBody(body))
  if (response.status !== 201) throw new Error(`${path}: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body
}

/** A halted VM with one small disk, so whole raw exports stay quick. */
async function smallVm(server: TestServer, demo: DemoIds, name: string): Promise<{ vm: string; disk: Disk }> {
  const { id } = await action(server, `/rest/v0/pools/${demo.pool}/actions/create_vm`, {
    name_label: name,
    template: demo.template,
    vdis: [{ name_label: `${name} disk`, size: DISK_SIZE, sr: demo.defaultSr }],
  })
  const [disk] = await vmDisks(server, id)
  if (disk === undefined) throw new Error('no disk')
  return { vm: id, disk }
}

/** POSTs `body` through node:http with its Content-Length, destroying the socket after `cutAfter` bytes. */
function upload(server: TestServer, path: string, body: Buffer, cutAfter: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { method: 'POST', headers: { authorization: ADMIN, 'content-length': body.length } })
    req.on('response', (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', reject)
    req.write(body.subarray(0, cutAfter), () => setTimeout(() => req.destroy(new Error('client went away')), 50))
  })
}

async function vdiCount(server: TestServer): Promise<number> {
  return (await server.json<unknown[]>('/rest/v0/vdis?fields=id')).body.length
}

function srFiles(server: TestServer, sr: string): string[] {
  try {
    return readdirSync(join(server.labDataDir, 'srs', sr)).sort()
  } catch {
    return []
  }
}

t.test('disk streams over the lab', async (t) => {
  // Outside tools run with spawnSync block the process past the server's keep-alive.
  const server = await startServer({ keepAlive: false })
  t.teardown(() => server.close())
  const demo = await demoIds(server)

  t.test('seeded disks hold a recognizable pattern, and usage figures are what the files allocate', async (t) => {
    const [disk] = await vmDisks(server, demo.haltedVm)
    if (disk === undefined) throw new Error('no disk')
    const head = await server.request(`/rest/v0/vdis/${disk.id}.raw`, { headers: { range: 'bytes=0-63' } })
    t.equal(head.status, 206)
    t.match(Buffer.from(await head.arrayBuffer()).toString(), /^KEEL demo disk staging-app/)
    const folder = join(server.labDataDir, 'srs', disk.$SR)
    const { statSync } = await import('node:fs')
    t.equal(disk.usage, statSync(join(folder, `${disk.id}.vhd`)).size, 'usage is the size of its file')
    const sr = await server.json<{ physical_usage: number }>(`/rest/v0/srs/${disk.$SR}`)
    const total = srFiles(server, disk.$SR).reduce((sum, name) => sum + statSync(join(folder, name)).size, 0)
    t.equal(sr.body.physical_usage, total, 'physical_usage is what the SR folder holds')
  })

  t.test('POST srs/:id/vdis creates a disk from a VHD or raw upload, and nothing from a broken one', async (t) => {
    const content = testDisk(8 * MiB, [0, 3], 5)
    const vhd = await collect(encodeVhdStream(planVhdStream({ size: content.size, allocated: content.allocated, uuid: demo.pool, now: 0 }), content.blocks()))
    const created = await server.json<{ id: string }>(`/rest/v0/srs/${demo.defaultSr}/vdis?name_label=imported&name_description=from%20a%20VHD`, { method: 'POST', body: vhd })
    t.equal(created.status, 201, JSON.stringify(created.body))
    t.equal(created.response.headers.get('location'), `/rest/v0/vdis/${created.body.id}`)
    const record = await server.json<{ name_label: string; name_description: string; size: number; $SR: string }>(`/rest/v0/vdis/${created.body.id}`)
    t.match(record.body, { name_label: 'imported', name_description: 'from a VHD', size: content.size, $SR: demo.defaultSr })
    t.ok((await bytesOf(server, `/rest/v0/vdis/${created.body.id}.raw`)).equals(rawOf(content)))

    const raw = await server.json<{ id: string }>(`/rest/v0/srs/${demo.defaultSr}/vdis?raw=true&name_label=raw`, { method: 'POST', body: rawOf(content) })
    t.equal(raw.status, 201)
    t.ok((await bytesOf(server, `/rest/v0/vdis/${raw.body.id}.raw`)).equals(rawOf(content)))

    const before = await vdiCount(server)
    const files = srFiles(server, demo.defaultSr)
    const broken = await server.json<{ code: string; data: { offset: number } }>(`/rest/v0/srs/${demo.defaultSr}/vdis`, { method: 'POST', body: vhd.subarray(0, vhd.length - 700) })
    t.equal(broken.status, 422)
    t.equal(broken.body.code, 'INVALID_DISK_STREAM')
    t.type(broken.body.data.offset, 'number')
    const chunked = await server.json<{ code: string }>(`/rest/v0/srs/${demo.defaultSr}/vdis?raw`, {
      method: 'POST',
      body: new Blob([rawOf(content)]).stream(),
      duplex: 'half',
    } as RequestInit)
    t.equal(chunked.status, 411)
    t.equal(chunked.body.code, 'LENGTH_REQUIRED')
    const missing = await server.json<{ code: string }>(`/rest/v0/srs/00000000-0000-4000-8000-000000000000/vdis`, { method: 'POST', body: vhd })
    t.equal(missing.status, 404)
    t.equal(await vdiCount(server), before, 'no VDI from the refused uploads')
    t.same(srFiles(server, demo.defaultSr), files, 'no file either')
  })

  t.test('exports side by side stay byte-exact while their block buffers are reused', async (t) => {
    const contents = [testDisk(16 * MiB, [0, 1, 2, 5, 6, 7], 11), testDisk(16 * MiB, [1, 2, 3, 4, 7], 12), testDisk(16 * MiB, [0, 3, 4, 5, 6], 13)]
    const ids: string[] = []
    for (const [i, content] of contents.entries()) {
      const created = await server.json<{ id: string }>(`/rest/v0/srs/${demo.defaultSr}/vdis?raw=true&name_label=pool-${i}`, { method: 'POST', body: rawOf(content) })
      t.equal(created.status, 201)
      ids.push(created.body.id)
    }
    const vhdLengths = await Promise.all(ids.map(async (id) => (await bytesOf(server, `/rest/v0/vdis/${id}.vhd`)).length))
    for (let round = 0; round < 3; round++) {
      const exports = ids.flatMap((id, i) => [
        bytesOf(server, `/rest/v0/vdis/${id}.raw?nbdConcurrency=${1 + round * 3}`).then((bytes) => ({ i, kind: 'raw', bytes })),
        bytesOf(server, `/rest/v0/vdis/${id}.vhd?nbdConcurrency=${2 + round}`).then((bytes) => ({ i, kind: 'vhd', bytes })),
      ])
      for (const { i, kind, bytes } of await Promise.all(exports)) {
        const content = contents[i]
        if (content === undefined) throw new Error('no content')
        if (kind === 'raw') t.ok(bytes.equals(rawOf(content)), `round ${round}: raw export of disk ${i} is its content`)
        else t.equal(bytes.length, vhdLengths[i], `round ${round}: VHD export of disk ${i} has its length`)
      }
    }
    const imported = await server.json<{ id: string }>(`/rest/v0/srs/${demo.defaultSr}/vdis?name_label=pool-check`, { method: 'POST', body: await bytesOf(server, `/rest/v0/vdis/${ids[1]}.vhd`) })
    t.equal(imported.status, 201)
    t.ok((await bytesOf(server, `/rest/v0/vdis/${imported.body.id}.raw`)).equals(rawOf(contents[1] as (typeof contents)[number])), 'a VHD exported after all that imports back to the same content')
  })

  t.test('snapshots fork in constant time, incremental export holds only the changes, chains agree with libvhdi', async (t) => {
    const { vm, disk } = await smallVm(server, demo, 'delta-source')
    const first = testDisk(DISK_SIZE, [0, 3, 7], 1)
    const put = await server.request(`/rest/v0/vdis/${disk.id}.vhd`, {
      method: 'PUT',
      body: await collect(encodeVhdStream(planVhdStream({ size: DISK_SIZE, allocated: first.allocated, uuid: disk.id, now: 0 }), first.blocks())),
    })
    t.equal(put.status, 204)
    const snapshot = await action(server, `/rest/v0/vms/${vm}/actions/snapshot`, { name_label: 'base' })
    const [base] = await vmDisks(server, snapshot.id, 'vm-snapshots')
    if (base === undefined) throw new Error('no disk snapshot')

    // A differencing VHD changing block 9 only, applied over the current content.
    const change = patternBlock(99)
    const patch = await collect(
      encodeVhdStream(
        planVhdStream({ size: DISK_SIZE, allocated: [9], uuid: disk.id, parent: { uuid: base.id, timestamp: 0, name: `${base.id}.vhd` }, now: 0 }),
        (async function* () {
          yield { index: 9, data: change }
        })(),
      ),
    )
    t.equal((await server.request(`/rest/v0/vdis/${disk.id}.vhd`, { method: 'PUT', body: patch })).status, 204)
    const current = Buffer.from(rawOf(first))
    change.copy(current, 9 * BLOCK_SIZE)
    t.ok((await bytesOf(server, `/rest/v0/vdis/${disk.id}.raw`)).equals(current), 'the patch landed over the old content')
    t.ok((await bytesOf(server, `/rest/v0/vdi-snapshots/${base.id}.raw`)).equals(rawOf(first)), 'the snapshot kept the content it had')

    const delta = await bytesOf(server, `/rest/v0/vdis/${disk.id}.vhd?base=${base.id}`)
    t.equal(delta.length, planVhdStream({ size: DISK_SIZE, allocated: [9], uuid: disk.id, parent: { uuid: base.id, timestamp: 0, name: `${base.id}.vhd` } }).length, 'one block')

    const dir = tempDir()
    t.teardown(dir.cleanup)
    const parentPath = join(dir.path, `${base.id}.vhd`)
    const childPath = join(dir.path, 'delta.vhd')
    writeFileSync(parentPath, await bytesOf(server, `/rest/v0/vdi-snapshots/${base.id}.vhd`))
    writeFileSync(childPath, delta)
    const info = run('vhdiinfo', [childPath])
    t.equal(info.status, 0, info.stderr)
    t.match(info.stdout.toString(), new RegExp(`Parent identifier\\s*:\\s*${base.id}`, 'i'))
    const script = `
import pyvhdi, sys, hashlib
child = pyvhdi.file(); child.open(sys.argv[1])
parent = pyvhdi.file(); parent.open(sys.argv[2]); child.set_parent(parent)
print(hashlib.sha256(child.read_buffer_at_offset(child.get_media_size(), 0)).hexdigest())
`
    const read = run(PY, ['-c', script, childPath, parentPath])
    t.equal(read.status, 0, read.stderr)
    t.equal(read.stdout.toString().trim(), sha(current), 'pyvhdi reads the chain as the current content')

    const copy = await server.json<{ id: string }>(`/rest/v0/srs/${demo.defaultSr}/vdis?name_label=restored`, { method: 'POST', body: readFileSync(parentPath) })
    t.equal(copy.status, 201)
    t.equal((await server.request(`/rest/v0/vdis/${copy.body.id}.vhd`, { method: 'PUT', body: delta })).status, 204)
    t.ok((await bytesOf(server, `/rest/v0/vdis/${copy.body.id}.raw`)).equals(current), 'base copy + delta = current content')

    const other = await server.json<{ code: string }>(`/rest/v0/vdis/${copy.body.id}.vhd?base=${base.id}`)
    t.equal(other.status, 422, 'a snapshot of another disk is no base')
    t.equal(other.body.code, 'INVALID_PARAMETERS')

    t.test('deleting the snapshot and reclaiming space merges the chain without losing a byte', async (t) => {
      const bases = (): number => srFiles(server, disk.$SR).filter((name) => name.startsWith('base-')).length
      const before = bases()
      t.equal((await server.request(`/rest/v0/vm-snapshots/${snapshot.id}`, { method: 'DELETE' })).status, 204)
      const reclaim = await server.request(`/rest/v0/srs/${disk.$SR}/actions/reclaim_space?sync=true`, { method: 'POST' })
      t.equal(reclaim.status, 204)
      t.ok((await bytesOf(server, `/rest/v0/vdis/${disk.id}.raw`)).equals(current))
      t.ok(bases() < before, 'the base the snapshot shared is merged away')
      t.notOk(srFiles(server, disk.$SR).includes(`${base.id}.vhd`), 'the snapshot file is gone')
      const footer = readFileSync(join(server.labDataDir, 'srs', disk.$SR, `${disk.id}.vhd`)).subarray(0, 512)
      t.equal(footer.readUInt32BE(60), 3, 'the disk is a dynamic VHD again: its chain is one file')
    })
  })

  t.test('XVA export and import round trip, plain, gzip and zstd; outside tools agree', async (t) => {
    const { vm, disk } = await smallVm(server, demo, 'xva-source')
    const content = testDisk(DISK_SIZE, [0, 1, 20, 31], 3)
    t.equal((await server.request(`/rest/v0/vdis/${disk.id}.raw`, { method: 'PUT', body: rawOf(content) })).status, 204)
    const dir = tempDir()
    t.teardown(dir.cleanup)
    const plain = await server.request(`/rest/v0/vms/${vm}.xva`)
    t.equal(plain.status, 200)
    t.equal(plain.headers.get('content-disposition'), `attachment; filename=${vm}.xva`)
    t.equal(plain.headers.get('content-length'), null)
    const xva = Buffer.from(await plain.arrayBuffer())
    const xvaPath = join(dir.path, 'vm.xva')
    writeFileSync(xvaPath, xva)
    const listing = run('tar', ['tf', xvaPath])
    t.equal(listing.status, 0, listing.stderr)
    const members = listing.stdout.toString().trim().split('\n')
    t.equal(members[0], 'ova.xml')
    const chunk = members.find((name) => /\/00000040$/.test(name))
    t.ok(chunk !== undefined, 'chunk 40 (in block 20) is there')
    const extracted = run('tar', ['xOf', xvaPath, chunk as string])
    const hash = run('xxhsum', ['-H64', '-'], extracted.stdout).stdout.toString().split(/\s/)[0]?.toUpperCase()
    t.equal(run('tar', ['xOf', xvaPath, `${chunk as string}.xxhash`]).stdout.toString(), hash, 'xxhsum agrees with the checksum member')

    for (const compress of ['none', 'gzip', 'zstd'] as const) {
      const body = compress === 'none' ? xva : await bytesOf(server, `/rest/v0/vms/${vm}.xva?compress=${compress}`)
      if (compress === 'zstd') {
        const path = join(dir.path, 'vm.xva.zst')
        writeFileSync(path, body)
        t.equal(run('zstd', ['-t', '-q', path]).status, 0, 'zstd -t accepts it')
      }
      const imported = await server.json<{ id: string }>(`/rest/v0/pools/${demo.pool}/vms?sr=${demo.defaultSr}`, { method: 'POST', body })
      t.equal(imported.status, 201, `${compress}: ${JSON.stringify(imported.body)}`)
      t.equal(imported.response.headers.get('location'), `/rest/v0/vms/${imported.body.id}`)
      const [copy] = await vmDisks(server, imported.body.id)
      t.ok(copy !== undefined && (await bytesOf(server, `/rest/v0/vdis/${copy.id}.raw`)).equals(rawOf(content)), `${compress}: the disk came back byte for byte`)
      const again = await bytesOf(server, `/rest/v0/vms/${imported.body.id}.xva`)
      t.equal(again.length, xva.length, `${compress}: exporting the import gives an archive of the same shape`)
    }

    const vms = (await server.json<unknown[]>('/rest/v0/vms?fields=id')).body.length
    const damaged = Buffer.from(xva)
    const at = xva.indexOf(Buffer.from(`${chunk as string}.xxhash`)) + 512
    damaged[at] = damaged[at] === 0x30 ? 0x31 : 0x30
    const refused = await server.json<{ code: string; data: { offset: number } }>(`/rest/v0/pools/${demo.pool}/vms`, { method: 'POST', body: damaged })
    t.equal(refused.status, 422)
    t.equal(refused.body.code, 'INVALID_DISK_STREAM')
    t.type(refused.body.data.offset, 'number')
    const truncated = await server.json<{ code: string }>(`/rest/v0/pools/${demo.pool}/vms`, { method: 'POST', body: xva.subarray(0, xva.length - 5000) })
    t.equal(truncated.status, 422, 'a truncated archive')
    t.equal(truncated.body.code, 'INVALID_DISK_STREAM')
    const tasks = await followTasks(server)
    t.teardown(() => tasks.close())
    await t.rejects(upload(server, `/rest/v0/pools/${demo.pool}/vms`, xva, Math.floor(xva.length / 2)), 'a client that goes away mid-archive')
    await t.rejects(upload(server, `/rest/v0/srs/${demo.defaultSr}/vdis?raw=true`, rawOf(content), 10 * MiB), 'and mid-disk')
    await tasks.ended(2)
    const ova = Buffer.alloc(1024)
    ova.write('vm.ovf', 0)
    ova.write('ustar', 257)
    const ovaAnswer = await server.json<{ code: string }>(`/rest/v0/pools/${demo.pool}/vms`, { method: 'POST', body: ova })
    t.equal(ovaAnswer.status, 415)
    t.equal(ovaAnswer.body.code, 'UNSUPPORTED_MEDIA_TYPE')
    t.equal((await server.json<unknown[]>('/rest/v0/vms?fields=id')).body.length, vms, 'no VM from the refused archives')
    t.same(srFiles(server, demo.defaultSr).filter((name) => name.endsWith('.tmp')), [], 'no temporary file')
  })

  t.test('a running VM is exported from a snapshot that is gone afterwards; the export is a task', async (t) => {
    const snapshots = (await server.json<unknown[]>('/rest/v0/vm-snapshots?fields=id')).body.length
    const xva = await bytesOf(server, `/rest/v0/vms/${demo.runningVm}.xva?compress=zstd`)
    t.equal(xva.readUInt32LE(0), 0xfd2fb528)
    const tasks = await server.json<Array<{ id: string; properties: { name: string; objectId: string } }>>('/rest/v0/tasks?fields=id,properties')
    const task = tasks.body.find(({ properties }) => properties.name === 'REST API: export VM (xva)' && properties.objectId === demo.runningVm)
    if (task === undefined) throw new Error('no export task')
    // The task ends once the snapshot is removed, which may be just after the last byte went out.
    const ended = await server.json<{ status: string; properties: { progress?: number } }>(`/rest/v0/tasks/${task.id}?wait=true`)
    t.equal(ended.body.status, 'success')
    t.equal((await server.json<unknown[]>('/rest/v0/vm-snapshots?fields=id')).body.length, snapshots)
  })

  t.test('bad export parameters and missing objects', async (t) => {
    const badCompress = await server.json<{ code: string }>(`/rest/v0/vms/${demo.haltedVm}.xva?compress=lz4`)
    t.equal(badCompress.status, 422)
    t.equal(badCompress.body.code, 'INVALID_PARAMETERS')
    const missing = await server.json<{ code: string }>('/rest/v0/vms/00000000-0000-4000-8000-000000000000.xva')
    t.equal(missing.status, 404)
    const noBase = await server.json<{ code: string }>(`/rest/v0/vdis/${(await vmDisks(server, demo.haltedVm))[0]?.id}.vhd?base=00000000-0000-4000-8000-000000000000`)
    t.equal(noBase.status, 404)
    const wrongSr = await server.json<{ code: string }>(`/rest/v0/pools/${demo.pool}/vms?sr=00000000-0000-4000-8000-000000000000`, { method: 'POST', body: Buffer.alloc(512) })
    t.equal(wrongSr.status, 404)
  })
})
