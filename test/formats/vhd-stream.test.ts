import t from 'tap'
import { writeFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { openVhdStream } from '../../src/formats/vhd/stream-decoder.js'
import { collect, drain, patternBlock, rawOf, run, sliced, streamError, tempDir, testDisk, VPC_OPTS } from '../helpers/disks.js'

const UUID = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
const MiB = 1024 * 1024

async function encode(disk: ReturnType<typeof testDisk>): Promise<Buffer> {
  const plan = planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: UUID, now: Date.UTC(2026, 0, 1) })
  const bytes = await collect(encodeVhdStream(plan, disk.blocks()))
  if (bytes.length !== plan.length) throw new Error(`planned ${plan.length} bytes, wrote ${bytes.length}`)
  return bytes
}

t.test('layout follows notes 1.11', async (t) => {
  const disk = testDisk(10 * MiB + 12345, [0, 3, 5])
  const bytes = await encode(disk)
  t.equal(bytes.toString('latin1', 0, 8), 'conectix')
  t.same(bytes.subarray(0, 512), bytes.subarray(bytes.length - 512), 'both footers are the same bytes')
  t.equal(bytes.toString('latin1', 512, 520), 'cxsparse')
  t.equal(bytes.readUInt32BE(1536), 4, 'first block right after a one-sector BAT')
  t.equal(bytes.readUInt32BE(1536 + 4), 0xffffffff)
  t.equal(bytes.readUInt32BE(1536 + 12), 4 + 4097)
  t.equal(bytes.readUInt32BE(1536 + 20), 4 + 2 * 4097)
  t.equal(bytes.length, 2048 + 3 * (BLOCK_SIZE + 512) + 512)
})

t.test('qemu-img reads what the encoder writes', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  for (const [size, allocated] of [
    [10 * MiB + 7 * 512, [0, 3, 5]],
    [7 * MiB, []],
    [BLOCK_SIZE, [0]],
    [4 * 1024 * MiB, [0, 1, 1000, 2047]],
  ] as const) {
    const disk = testDisk(size, [...allocated])
    const vhd = join(dir.path, `d${size}.vhd`)
    writeFileSync(vhd, await encode(disk))
    const back = join(dir.path, `d${size}.raw`)
    const converted = run('qemu-img', ['convert', '--image-opts', VPC_OPTS(vhd), '-O', 'raw', back])
    t.equal(converted.status, 0, converted.stderr)
    const info = JSON.parse(run('qemu-img', ['info', '--output=json', '--image-opts', VPC_OPTS(vhd)]).stdout.toString())
    t.equal(info['virtual-size'], size, `size ${size}`)
    if (size <= 16 * MiB) {
      t.ok(readFileSync(back).equals(rawOf(disk)), `content of ${size}`)
    } else {
      for (const index of allocated) {
        const got = run('dd', [`if=${back}`, 'bs=2M', `skip=${index}`, 'count=1', 'status=none']).stdout
        t.ok(got.equals(disk.data.get(index) as Buffer), `block ${index}`)
      }
    }
  }
})

t.test('decoder round-trips the encoder at odd chunk boundaries', async (t) => {
  const disk = testDisk(10 * MiB + 12345, [0, 3, 5])
  const bytes = await encode(disk)
  for (const slice of [1, 511, 7 * 1024, 65536 + 3, bytes.length]) {
    const input = slice === 1 ? sliced(bytes.subarray(0, 4096), 1) : sliced(bytes, slice)
    if (slice === 1) {
      // One-byte slices over the whole stream would take long; footer, header and BAT cover the state machine.
      const opened = await openVhdStream(input)
      t.equal(opened.size, disk.size)
      continue
    }
    const opened = await openVhdStream(input)
    t.equal(opened.size, disk.size)
    const blocks = await drain(opened.blocks)
    t.same(
      blocks.map((b) => b.index),
      disk.allocated,
    )
    t.ok(blocks.every((b) => b.data.equals(disk.data.get(b.index) as Buffer) && b.bitmap === undefined), `slices of ${slice}`)
  }
})

t.test('decoder reads what qemu-img writes', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const raw = Buffer.alloc(10 * MiB)
  patternBlock(7).copy(raw, 2 * MiB)
  patternBlock(8).copy(raw, 8 * MiB, 0, 2 * MiB)
  raw.write('hello', 9 * MiB + 100)
  writeFileSync(join(dir.path, 'in.raw'), raw)
  for (const options of ['subformat=dynamic', 'subformat=dynamic,force_size=on']) {
    const vhd = join(dir.path, 'q.vhd')
    const converted = run('qemu-img', ['convert', '-f', 'raw', '-O', 'vpc', '-o', options, join(dir.path, 'in.raw'), vhd])
    t.equal(converted.status, 0, converted.stderr)
    const opened = await openVhdStream(sliced(readFileSync(vhd), 7 * 1024))
    const content = Buffer.alloc(Math.ceil(opened.size / BLOCK_SIZE) * BLOCK_SIZE)
    for await (const block of opened.blocks) block.data.copy(content, block.index * BLOCK_SIZE)
    t.ok(content.subarray(0, raw.length).equals(raw), options)
    t.ok(opened.size >= raw.length)
  }
})

t.test('decoder accepts blocks out of index order', async (t) => {
  const disk = testDisk(6 * MiB, [0, 2])
  const bytes = await encode(disk)
  // Swap the two stored blocks and their BAT entries.
  const stored = BLOCK_SIZE + 512
  const first = Buffer.from(bytes.subarray(2048, 2048 + stored))
  bytes.copy(bytes, 2048, 2048 + stored, 2048 + 2 * stored)
  first.copy(bytes, 2048 + stored)
  bytes.writeUInt32BE(4 + 4097, 1536)
  bytes.writeUInt32BE(4, 1536 + 8)
  const opened = await openVhdStream(sliced(bytes, 65536))
  const blocks = await drain(opened.blocks)
  t.same(
    blocks.map((b) => b.index),
    [2, 0],
  )
  t.ok(blocks.every((b) => b.data.equals(disk.data.get(b.index) as Buffer)))
})

t.test('every malformed input names its offset', async (t) => {
  const disk = testDisk(6 * MiB, [1])
  const good = await encode(disk)
  const corrupt = (edit: (bytes: Buffer) => void): Buffer => {
    const bytes = Buffer.from(good)
    edit(bytes)
    return bytes
  }
  const fixChecksum = (bytes: Buffer, start: number, size: number, at: number): void => {
    bytes.writeUInt32BE(0, start + at)
    let sum = 0
    for (let i = start; i < start + size; i++) sum += bytes[i] as number
    bytes.writeUInt32BE(~sum >>> 0, start + at)
  }
  const cases: Array<[string, Buffer, number, RegExp]> = [
    ['footer cookie', corrupt((b) => b.write('conectiX', 0)), 0, /cookie/],
    ['footer checksum', corrupt((b) => (b[100] = 1)), 64, /footer checksum/],
    ['header cookie', corrupt((b) => b.write('cxsparsX', 512)), 512, /cookie/],
    ['header checksum', corrupt((b) => (b[512 + 800] = 1)), 548, /header checksum/],
    [
      'block size',
      corrupt((b) => {
        b.writeUInt32BE(1024 * 1024, 512 + 32)
        fixChecksum(b, 512, 1024, 36)
      }),
      544,
      /block size/,
    ],
    [
      'huge table',
      corrupt((b) => {
        b.writeUInt32BE(0xffffffff, 512 + 28)
        fixChecksum(b, 512, 1024, 36)
      }),
      540,
      /exceeds/,
    ],
    [
      'version',
      corrupt((b) => {
        b.writeUInt32BE(0x20000, 12)
        fixChecksum(b, 0, 512, 64)
      }),
      12,
      /version/,
    ],
    [
      'block before the BAT',
      corrupt((b) => b.writeUInt32BE(2, 1536 + 4)),
      1540,
      /before the end of the table/,
    ],
    ['trailing footer', corrupt((b) => (b[b.length - 400] = 1)), good.length - 512, /trailing footer differs/],
    ['truncated in footer', good.subarray(0, 300), 300, /truncated in VHD footer/],
    ['truncated in header', good.subarray(0, 1000), 1000, /truncated in VHD header/],
    ['truncated in BAT', good.subarray(0, 1700), 1700, /truncated/],
    ['truncated in a block', good.subarray(0, 2048 + 10000), 2048 + 10000, /truncated in VHD block 1/],
    ['truncated in the final footer', good.subarray(0, good.length - 100), good.length - 100, /truncated in VHD trailing footer/],
    ['garbage after the blocks', Buffer.concat([good.subarray(0, good.length - 512), Buffer.from([0, 0, 9]), good.subarray(good.length - 512)]), good.length - 510, /unexpected bytes/],
  ]
  for (const [name, bytes, offset, message] of cases) {
    for (const slice of [511, 7 * 1024]) {
      const error = await streamError(
        (async () => {
          const opened = await openVhdStream(sliced(bytes, slice))
          await drain(opened.blocks)
        })(),
      )
      t.equal(error.code, 'INVALID_DISK_STREAM', name)
      t.equal(error.data?.['offset'], offset, `${name} at ${offset} (slices of ${slice})`)
      t.match(error.message, message, name)
    }
  }
})

t.test('zero padding before the trailing footer is tolerated', async (t) => {
  const disk = testDisk(4 * MiB, [0])
  const good = await encode(disk)
  const padded = Buffer.concat([good.subarray(0, good.length - 512), Buffer.alloc(4096), good.subarray(good.length - 512)])
  const opened = await openVhdStream(sliced(padded, 1000))
  t.equal((await drain(opened.blocks)).length, 1)
})

t.test('the plan refuses sizes above VHD_MAX_SIZE and unordered allocations', async (t) => {
  t.throws(() => planVhdStream({ size: 3 * 1024 ** 4, allocated: [], uuid: UUID }), { code: 'DISK_TOO_LARGE' })
  t.throws(() => planVhdStream({ size: 8 * MiB, allocated: [2, 1], uuid: UUID }), RangeError)
  t.throws(() => planVhdStream({ size: 8 * MiB, allocated: [4], uuid: UUID }), RangeError)
})

t.test('property: random disks round-trip through encoder and decoder at random slice sizes', async (t) => {
  let seed = 42
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) >>> 0
    return seed % n
  }
  for (let round = 0; round < 12; round++) {
    const blocks = 1 + random(6)
    const size = blocks * BLOCK_SIZE - random(4) * 512
    const allocated = Array.from({ length: blocks }, (_, i) => i).filter(() => random(2) === 0)
    const disk = testDisk(size, allocated, round)
    const bytes = await encode(disk)
    const opened = await openVhdStream(sliced(bytes, 1 + random(300_000)))
    t.equal(opened.size, size)
    const got = await drain(opened.blocks)
    t.same(
      got.map((b) => b.index),
      allocated,
      `round ${round}`,
    )
    t.ok(got.every((b) => b.data.equals(disk.data.get(b.index) as Buffer)))
  }
})

t.test('a differencing stream carries its parent reference', async (t) => {
  const disk = testDisk(8 * MiB, [1])
  const parent = { uuid: '11111111-2222-4333-8444-555555555555', timestamp: 1234, name: 'base.vhd' }
  const plan = planVhdStream({ size: disk.size, allocated: disk.allocated, uuid: UUID, parent })
  const bytes = await collect(encodeVhdStream(plan, disk.blocks()))
  t.equal(bytes.length, plan.length)
  const opened = await openVhdStream(sliced(bytes, 511))
  t.equal(opened.footer.diskType, 4)
  t.equal(opened.header.parentUuid, parent.uuid)
  t.equal(opened.header.parentTimestamp, 1234)
  t.equal(opened.header.parentUnicodeName, 'base.vhd')
  t.equal((await drain(opened.blocks)).length, 1)
  t.same(opened.parentPaths, ['base.vhd'])
})

t.test('geometry: C×H×S never exceeds the size, saturates at 65535/16/255', async (t) => {
  const { geometryForSize } = await import('../../src/formats/vhd/geometry.js')
  for (const size of [MiB, 10 * MiB, 127 * 1024 * MiB, 2 * 1024 ** 4]) {
    const g = geometryForSize(size)
    t.ok(g.cylinders * g.heads * g.sectorsPerTrack * 512 <= size, `size ${size}`)
  }
  t.same(geometryForSize(2 * 1024 ** 4), { cylinders: 65535, heads: 16, sectorsPerTrack: 255 })
  t.same(geometryForSize(10 * MiB), { cylinders: 301, heads: 4, sectorsPerTrack: 17 })
})

t.test('a 100 GiB sparse disk streams with exact length and bounded memory', async (t) => {
  const size = 100 * 1024 ** 3
  const allocated = [0, 25_000, 51_199]
  const plan = planVhdStream({ size, allocated, uuid: UUID })
  let length = 0
  const block = patternBlock(3)
  for await (const chunk of encodeVhdStream(
    plan,
    (async function* () {
      for (const index of allocated) yield { index, data: block }
    })(),
  )) {
    length += chunk.length
  }
  t.equal(length, plan.length)
  t.equal(plan.length, 512 + 1024 + 51_200 * 4 + 3 * (BLOCK_SIZE + 512) + 512)
})

t.test('qemu-img compare: the VHD export and the raw export of a disk are identical', async (t) => {
  const { encodeRawStream } = await import('../../src/formats/raw/raw-encoder.js')
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const disk = testDisk(12 * MiB, [1, 4, 5])
  writeFileSync(join(dir.path, 'd.vhd'), await encode(disk))
  writeFileSync(join(dir.path, 'd.raw'), await collect(encodeRawStream({ size: disk.size, allocated: disk.allocated, blocks: disk.blocks() })))
  const compared = run('qemu-img', ['compare', '--image-opts', `driver=raw,file.filename=${join(dir.path, 'd.raw')}`, VPC_OPTS(join(dir.path, 'd.vhd'))])
  t.equal(compared.status, 0, compared.stdout.toString() + compared.stderr)
})

t.test("XAPI's layout (zero sector at 1536, BAT at 2048, batmap after it, creator caml) decodes", async (t) => {
  const { encodeHeader } = await import('../../src/formats/vhd/header.js')
  const { encodeFooter, newFooter } = await import('../../src/formats/vhd/footer.js')
  const { encodeBat, emptyBat } = await import('../../src/formats/vhd/bat.js')
  const size = 6 * MiB
  const footer = encodeFooter({ ...newFooter({ size, uuid: UUID, diskType: 3 }), creatorApplication: 'caml', creatorVersion: 1, creatorHostOs: 0, timestamp: 0 })
  const header = encodeHeader({
    tableOffset: 2048,
    maxTableEntries: 3,
    blockSize: BLOCK_SIZE,
    checksum: 0,
    parentUuid: '00000000-0000-0000-0000-000000000000',
    parentTimestamp: 0,
    parentUnicodeName: '',
    parentLocators: [],
  })
  const bat = emptyBat(3)
  const batmap = Buffer.alloc(1024, 0x11)
  const first = (2048 + 512 + batmap.length) / 512
  bat[2] = first
  bat[0] = first + 4097
  const block = (seed: number): Buffer => Buffer.concat([Buffer.alloc(512, 0xff), patternBlock(seed)])
  const bytes = Buffer.concat([footer, header, Buffer.alloc(512), encodeBat(bat), batmap, block(2), block(0), footer])
  const opened = await openVhdStream(sliced(bytes, 9999))
  const blocks = await drain(opened.blocks)
  t.same(
    blocks.map((b) => b.index),
    [2, 0],
  )
  t.ok(blocks[0]?.data.equals(patternBlock(2)))
  t.ok(blocks[1]?.data.equals(patternBlock(0)))
})

t.test('allocation() reads the table before any block, and the blocks follow from the same stream', async (t) => {
  const disk = testDisk(10 * MiB + 3 * 512, [0, 2, 5])
  const bytes = await encode(disk)
  let pulled = 0
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of sliced(bytes, 65537)) {
      pulled += chunk.length
      yield chunk
    }
  }
  const opened = await openVhdStream(counted())
  t.same(await opened.allocation(), [0, 2, 5])
  t.ok(pulled < 2048 + 65537, `the stream read up to the table only (${pulled} bytes)`)
  const blocks = await drain(opened.blocks)
  t.same(blocks.map((block) => block.index), [0, 2, 5])
  t.ok(blocks.every((block) => block.data.equals(disk.data.get(block.index) as Buffer)), 'the blocks, byte for byte')

  const parent = { uuid: '11111111-2222-4333-8444-555555555555', timestamp: 1234, name: 'base.vhd' }
  const differencing = await collect(encodeVhdStream(planVhdStream({ size: disk.size, allocated: [2], uuid: UUID, parent }), disk.blocks([2])))
  const child = await openVhdStream(sliced(differencing, 511))
  t.same(await child.allocation(), [2], 'a differencing stream, its locators read on the way')
  t.same((await drain(child.blocks)).map((block) => block.index), [2])
  t.same(child.parentPaths, ['base.vhd'])
})
