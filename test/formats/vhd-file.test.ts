import t from 'tap'
import { open, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { VhdFile } from '../../src/formats/vhd/vhd-file.js'
import { VhdChain } from '../../src/formats/vhd/chain.js'
import { coalesce } from '../../src/formats/vhd/coalesce.js'
import { fileHandleAccess, type RandomAccess } from '../../src/formats/vhd/random-access.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { readAhead } from '../../src/formats/read-ahead.js'
import { collect, patternBlock, run, tempDir, VPC_OPTS } from '../helpers/disks.js'

const MiB = 1024 * 1024
const BASE = '11111111-2222-4333-8444-555555555555'
const CHILD = '66666666-7777-4888-8999-aaaaaaaaaaaa'
const PY = '/usr/bin/python3'

function memory(initial: Buffer = Buffer.alloc(0)): RandomAccess & { bytes(): Buffer } {
  let bytes: Buffer = Buffer.from(initial)
  return {
    async read(position, length) {
      return Buffer.from(bytes.subarray(position, position + length))
    },
    async write(position, pieces) {
      const data = Buffer.isBuffer(pieces) ? pieces : Buffer.concat(pieces)
      if (position + data.length > bytes.length) bytes = Buffer.concat([bytes, Buffer.alloc(position + data.length - bytes.length)])
      data.copy(bytes, position)
    },
    async size() {
      return bytes.length
    },
    bytes: () => bytes,
  }
}

async function onDisk(path: string): Promise<{ io: RandomAccess; close: () => Promise<void> }> {
  const handle = await open(path, 'w+')
  return { io: fileHandleAccess(handle), close: () => handle.close() }
}

/** Reads a VHD (with its parent, if any) through libvhdi. */
function pyvhdiRead(child: string, parent: string | undefined, offset: number, length: number): Buffer {
  const script = `
import pyvhdi, sys
child = pyvhdi.file(); child.open(sys.argv[1])
if sys.argv[2]:
    parent = pyvhdi.file(); parent.open(sys.argv[2]); child.set_parent(parent)
child.seek_offset(int(sys.argv[3]))
sys.stdout.buffer.write(child.read_buffer(int(sys.argv[4])))
`
  const result = run(PY, ['-c', script, child, parent ?? '', String(offset), String(length)])
  if (result.status !== 0) throw new Error(result.stderr)
  return result.stdout
}

t.test('create, append blocks, reopen: the file stays a valid VHD for qemu-img', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const path = join(dir.path, 'base.vhd')
  const file = await onDisk(path)
  const vhd = await VhdFile.create(file.io, { size: 1024 * MiB, uuid: BASE })
  await vhd.writeBlock(5, patternBlock(5))
  await vhd.writeBlock(1, patternBlock(1))
  await vhd.writeBlock(5, patternBlock(55))
  t.equal(vhd.fileSize, 1536 + 2048 + 2 * (BLOCK_SIZE + 512) + 512, 'one 512-entry BAT, two appended blocks, the footer')
  await file.close()
  const reopened = await VhdFile.open(fileHandleAccess(await open(path, 'r')))
  t.same(reopened.allocatedBlocks(), [1, 5])
  t.ok((await reopened.readBlock(5))?.data.equals(patternBlock(55)))
  t.equal(await reopened.readBlock(2), undefined)
  const info = run('qemu-img', ['info', '--output=json', '--image-opts', VPC_OPTS(path)])
  t.equal(JSON.parse(info.stdout.toString())['virtual-size'], 1024 * MiB)
  t.ok(pyvhdiRead(path, undefined, 5 * BLOCK_SIZE, BLOCK_SIZE).equals(patternBlock(55)), 'libvhdi reads the appended block')
  const vhdiinfo = run('vhdiinfo', [path])
  t.equal(vhdiinfo.status, 0)
  t.match(vhdiinfo.stdout.toString(), /Dynamic/)
})

t.test('differencing chain: vhdiinfo and pyvhdi agree with VhdChain, sector bitmaps honoured', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const basePath = join(dir.path, 'base.vhd')
  const childPath = join(dir.path, 'child.vhd')
  const baseFile = await onDisk(basePath)
  const base = await VhdFile.create(baseFile.io, { size: 64 * MiB, uuid: BASE, now: Date.UTC(2026, 0, 1) })
  await base.writeBlock(0, patternBlock(100))
  await base.writeBlock(2, patternBlock(102))
  await base.writeBlock(3, patternBlock(103))
  const childFile = await onDisk(childPath)
  const child = await VhdFile.create(childFile.io, {
    size: 64 * MiB,
    uuid: CHILD,
    parent: { uuid: BASE, timestamp: base.footer.timestamp, name: 'base.vhd' },
  })
  await child.writeBlock(2, patternBlock(202))
  await child.writeBlock(7, patternBlock(207))
  // Block 3: only the first 8 sectors in the child.
  const partial = Buffer.alloc(512)
  partial[0] = 0xff
  await child.writeBlock(3, patternBlock(203), partial)

  const chain = new VhdChain([child, base])
  t.same(chain.allocatedBlocks(), [0, 2, 3, 7])
  const expected3 = Buffer.concat([patternBlock(203).subarray(0, 4096), patternBlock(103).subarray(4096)])
  t.ok((await chain.readBlock(0)).equals(patternBlock(100)))
  t.ok((await chain.readBlock(2)).equals(patternBlock(202)))
  t.ok((await chain.readBlock(3)).equals(expected3))
  t.ok((await chain.readBlock(4)).equals(Buffer.alloc(BLOCK_SIZE)))
  // Read into a caller's buffer (dirty on purpose): the same content, in that very buffer, merged or not.
  for (const [index, expected] of [[0, patternBlock(100)], [2, patternBlock(202)], [3, expected3], [4, Buffer.alloc(BLOCK_SIZE)]] as const) {
    const into = Buffer.alloc(BLOCK_SIZE, 0x5a)
    const got = await chain.readBlock(index, into)
    t.equal(got, into, `block ${index} lands in the buffer given`)
    t.ok(got.equals(expected), `block ${index} read into a buffer given`)
  }

  const info = run('vhdiinfo', [childPath]).stdout.toString()
  t.match(info, /Differential/)
  t.match(info, new RegExp(`Parent identifier\\s*:\\s*${BASE}`, 'i'))
  t.match(info, /Parent filename\s*:\s*base\.vhd/)
  for (const index of [0, 2, 3, 4, 7]) {
    const got = pyvhdiRead(childPath, basePath, index * BLOCK_SIZE, BLOCK_SIZE)
    t.ok(got.equals(await chain.readBlock(index)), `libvhdi agrees on block ${index}`)
  }

  const ordered = []
  for await (const { index, value } of readAhead(chain.allocatedBlocks(), (i) => chain.readBlock(i), 3)) ordered.push([index, value.length])
  t.same(ordered, [
    [0, BLOCK_SIZE],
    [2, BLOCK_SIZE],
    [3, BLOCK_SIZE],
    [7, BLOCK_SIZE],
  ])

  // Coalesce the child into the base: the base then reads as the chain did.
  const before = await Promise.all([0, 2, 3, 4, 7].map((i) => chain.readBlock(i)))
  await coalesce(child, base)
  t.equal(base.uuid, CHILD)
  const after = await Promise.all([0, 2, 3, 4, 7].map(async (i) => (await base.readBlock(i))?.data ?? Buffer.alloc(BLOCK_SIZE)))
  after.forEach((block, i) => t.ok(block.equals(before[i] as Buffer), `block ${[0, 2, 3, 4, 7][i]} survives the coalesce`))
  await baseFile.close()
  await childFile.close()
  const reopened = await VhdFile.open(fileHandleAccess(await open(basePath, 'r')))
  t.equal(reopened.uuid, CHILD)
  t.ok(pyvhdiRead(basePath, undefined, 3 * BLOCK_SIZE, BLOCK_SIZE).equals(expected3), 'libvhdi reads the coalesced file')
})

t.test('a differencing stream (incremental export) applied on a copy of its base gives the current content', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const baseIo = memory()
  const base = await VhdFile.create(baseIo, { size: 32 * MiB, uuid: BASE })
  await base.writeBlock(1, patternBlock(1))
  await base.writeBlock(4, patternBlock(4))
  const plan = planVhdStream({ size: 32 * MiB, allocated: [4, 9], uuid: CHILD, parent: { uuid: BASE, timestamp: base.footer.timestamp, name: 'base.vhd' } })
  const delta = await collect(
    encodeVhdStream(
      plan,
      (async function* () {
        yield { index: 4, data: patternBlock(44) }
        yield { index: 9, data: patternBlock(99) }
      })(),
    ),
  )
  t.equal(delta.length, plan.length)
  await writeFile(join(dir.path, 'base.vhd'), baseIo.bytes())
  await writeFile(join(dir.path, 'delta.vhd'), delta)
  t.match(run('vhdiinfo', [join(dir.path, 'delta.vhd')]).stdout.toString(), /Differential/)
  for (const [index, seed] of [
    [1, 1],
    [4, 44],
    [9, 99],
  ] as const) {
    t.ok(pyvhdiRead(join(dir.path, 'delta.vhd'), join(dir.path, 'base.vhd'), index * BLOCK_SIZE, BLOCK_SIZE).equals(patternBlock(seed)), `block ${index}`)
  }
  const child = await VhdFile.open(memory(await readFile(join(dir.path, 'delta.vhd'))))
  t.same(child.allocatedBlocks(), [4, 9])
  t.same(new VhdChain([child, base]).allocatedBlocks(), [1, 4, 9])
})

t.test('opening damaged files fails with the offset', async (t) => {
  const io = memory()
  const vhd = await VhdFile.create(io, { size: 8 * MiB, uuid: BASE })
  await vhd.writeBlock(0, patternBlock(0))
  const good = io.bytes()
  const broken = Buffer.from(good)
  broken[10] = 9
  await t.rejects(VhdFile.open(memory(broken)), { code: 'INVALID_DISK_STREAM', data: { offset: 0 } })
  await t.rejects(VhdFile.open(memory(good.subarray(0, 1000))), { code: 'INVALID_DISK_STREAM' })
  const badChain = await VhdFile.create(memory(), { size: 8 * MiB, uuid: CHILD, parent: { uuid: CHILD, timestamp: 0, name: 'x' } })
  t.throws(() => new VhdChain([badChain, vhd]), { code: 'INVALID_DISK_STREAM' })
  t.throws(() => new VhdChain([badChain]), { code: 'INVALID_DISK_STREAM' })
})
