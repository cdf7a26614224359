import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import tar from 'tar-stream'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { compressor, decompressor, detectCompression, isOva, peek } from '../../src/formats/compression.js'
import { encodeXva } from '../../src/formats/xva/xva-writer.js'
import { openXvaStream } from '../../src/formats/xva/xva-reader.js'
import { buildOvaXml, parseOvaXml, type XvaDescription } from '../../src/formats/xva/ova-xml.js'
import { decodeXmlRpc, encodeXmlRpc, XmlRpcDouble } from '../../src/xapi/xml-rpc.js'
import { collect, drain, rawOf, run, sliced, streamError, tempDir, testDisk } from '../helpers/disks.js'

const MiB = 1024 * 1024

const description = (sizes: number[]): XvaDescription => ({
  vm: {
    uuid: '0a1b2c3d-0000-4000-8000-000000000001',
    name_label: 'web <01> & co',
    name_description: 'a VM',
    memory_static_max: 2 * 1024 * MiB,
    memory_dynamic_max: 2 * 1024 * MiB,
    memory_dynamic_min: 1024 * MiB,
    memory_static_min: 512 * MiB,
    VCPUs_max: 4,
    VCPUs_at_startup: 2,
    is_a_template: false,
    tags: ['prod'],
    other_config: { mac_seed: 'abc' },
  },
  disks: sizes.map((size, i) => ({
    uuid: `0a1b2c3d-0000-4000-8000-00000000010${i}`,
    name_label: `disk ${i}`,
    name_description: '',
    virtual_size: size,
    device: `xvd${String.fromCharCode(97 + i)}`,
    userdevice: String(i),
    bootable: i === 0,
    mode: 'RW' as const,
  })),
  vifs: [{ uuid: '0a1b2c3d-0000-4000-8000-000000000201', device: '0', MAC: '02:00:00:00:00:01', MTU: 1500, network_name_label: 'LAN' }],
})

const disks = [testDisk(6 * MiB + 512 * 3, [0, 2], 1), testDisk(9 * MiB, [3], 2)]
const desc = description(disks.map((d) => d.size))
const contents = () => disks.map((d) => ({ size: d.size, allocated: d.allocated, blocks: d.blocks() }))

t.test('XML-RPC values round-trip, integers as bare strings', async (t) => {
  const xml = encodeXmlRpc({ a: 10737418240, b: true, c: [new XmlRpcDouble(1.5), 'x<y'], d: new Date(0) })
  t.match(xml, /<value>10737418240<\/value>/)
  t.match(xml, /<double>1\.5<\/double>/)
  t.match(xml, /<dateTime\.iso8601>19700101T00:00:00Z<\/dateTime\.iso8601>/)
  t.match(xml, /x&lt;y/)
  t.same(decodeXmlRpc(xml), { a: '10737418240', b: true, c: [new XmlRpcDouble(1.5), 'x<y'], d: '19700101T00:00:00Z' })
  t.throws(() => decodeXmlRpc('<value><struct><member>'))
})

t.test('ova.xml describes the VM and parses back', async (t) => {
  const { xml, diskRefs } = buildOvaXml(desc)
  t.same(diskRefs, ['Ref:003', 'Ref:005'])
  const parsed = parseOvaXml(xml)
  t.same(parsed.description, desc)
  t.same(
    parsed.entries.map((e) => e.ref),
    diskRefs,
  )
})

t.test('tar tvf lists ova.xml first, chunks in order, zero chunks left out except first and last; xxhsum agrees', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const xva = await collect(encodeXva(desc, contents()))
  const path = join(dir.path, 'vm.xva')
  writeFileSync(path, xva)
  const listing = run('tar', ['tf', path])
  t.equal(listing.status, 0, listing.stderr)
  t.same(listing.stdout.toString().trim().split('\n'), [
    'ova.xml',
    // disk 0: 7 chunks (6 MiB + 1536 B): 0, 1 (block 0), 4, 5 (block 2), 6 the short last one
    ...[0, 1, 4, 5, 6].flatMap((i) => [`Ref:003/${String(i).padStart(8, '0')}`, `Ref:003/${String(i).padStart(8, '0')}.xxhash`]),
    // disk 1: 9 chunks: 0, 6, 7 (block 3), 8 last
    ...[0, 6, 7, 8].flatMap((i) => [`Ref:005/${String(i).padStart(8, '0')}`, `Ref:005/${String(i).padStart(8, '0')}.xxhash`]),
  ])
  t.equal(run('tar', ['xOf', path, 'Ref:003/00000006']).stdout.length, 1536, 'the last chunk is short')
  for (const member of ['Ref:003/00000000', 'Ref:003/00000006', 'Ref:005/00000000', 'Ref:005/00000007']) {
    const data = run('tar', ['xOf', path, member]).stdout
    const ours = run('tar', ['xOf', path, `${member}.xxhash`]).stdout.toString()
    const theirs = run('xxhsum', ['-H64', '-'], data).stdout.toString().split(/\s/)[0]?.toUpperCase()
    t.equal(ours, theirs, `xxhsum agrees on ${member}`)
  }
  const zeroHash = run('tar', ['xOf', path, 'Ref:005/00000000.xxhash']).stdout.toString()
  t.equal(zeroHash, '87D2A1B6E1163EF1', 'a zero first chunk has the known hash')
})

t.test('reader round-trips the writer at odd chunk boundaries, plain, gzip and zstd', async (t) => {
  const xva = await collect(encodeXva(desc, contents()))
  for (const kind of ['none', 'gzip', 'zstd'] as const) {
    const bytes = kind === 'none' ? xva : await collect(Readable.from([xva]).pipe(compressor(kind)))
    for (const slice of kind === 'none' ? [511, 7 * 1024, 100_003] : [65536]) {
      const { head, stream } = await peek(sliced(bytes, slice), 4)
      t.equal(detectCompression(head), kind)
      const plain = kind === 'none' ? stream : Readable.from(stream).pipe(decompressor(kind))
      const reader = await openXvaStream(plain)
      t.same(reader.description, desc)
      const blocks = await drain(reader.blocks)
      t.same(
        blocks.map((b) => [b.disk, b.index]),
        [
          [0, 0],
          [0, 2],
          [1, 3],
        ],
        `${kind} in slices of ${slice}`,
      )
      for (const block of blocks) {
        const disk = disks[block.disk]!
        const raw = rawOf(disk)
        const expected = Buffer.alloc(BLOCK_SIZE)
        raw.copy(expected, 0, block.index * BLOCK_SIZE, Math.min(raw.length, (block.index + 1) * BLOCK_SIZE))
        t.ok(block.data.equals(expected))
      }
    }
  }
})

t.test('zstd -t accepts the compressed XVA and zstd -d | tar t lists it', async (t) => {
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const path = join(dir.path, 'vm.xva.zst')
  await pipeline(Readable.from(encodeXva(desc, contents())), compressor('zstd'), (await import('node:fs')).createWriteStream(path))
  const test = run('zstd', ['-t', '-q', path])
  t.equal(test.status, 0, test.stderr)
  const listed = run('sh', ['-c', `zstd -dc ${path} | tar t | head -1`]).stdout.toString().trim()
  t.equal(listed, 'ova.xml')
})

/** Builds a tar from members, for malformed archives. */
async function tarOf(members: Array<[string, Buffer]>): Promise<Buffer> {
  const pack = tar.pack()
  for (const [name, data] of members) pack.entry({ name, size: data.length }, data)
  pack.finalize()
  return collect(pack as AsyncIterable<Buffer>)
}

t.test('every malformed archive fails with the offset', async (t) => {
  const good = await collect(encodeXva(desc, contents()))
  const { xml } = buildOvaXml(desc)
  const ovaSize = 512 + Math.ceil(Buffer.byteLength(xml) / 512) * 512
  const readAll = async (bytes: Buffer, slice = 7 * 1024) => {
    const reader = await openXvaStream(sliced(bytes, slice))
    await drain(reader.blocks)
  }
  // The first chunk's data starts right after ova.xml and the chunk header.
  const badChecksum = Buffer.from(good)
  badChecksum.writeUInt8(badChecksum.readUInt8(ovaSize + 512 + 10) ^ 1, ovaSize + 512 + 10)
  let error = await streamError(readAll(badChecksum))
  t.equal(error.code, 'INVALID_DISK_STREAM')
  t.equal(error.data?.['offset'], ovaSize)
  t.match(error.message, /checksum mismatch for Ref:003\/00000000/)

  for (const cut of [100, 600, ovaSize + 700, good.length - 1024 * 1024 - 5000]) {
    error = await streamError(readAll(good.subarray(0, cut), 511))
    t.equal(error.code, 'INVALID_DISK_STREAM', `cut at ${cut}`)
    t.type(error.data?.['offset'], 'number')
    t.ok((error.data?.['offset'] as number) <= cut, `offset ${error.data?.['offset']} within the ${cut} bytes received`)
  }

  const badHeader = Buffer.from(good)
  badHeader.writeUInt8(badHeader.readUInt8(ovaSize + 148) ^ 0x55, ovaSize + 148)
  error = await streamError(readAll(badHeader))
  t.equal(error.data?.['offset'], ovaSize)
  t.match(error.message, /bad tar archive/)

  const zero = Buffer.alloc(MiB)
  const cases: Array<[string, Buffer, RegExp, number]> = [
    ['ova.xml not first', await tarOf([['Ref:003/00000000', zero]]), /first member must be ova.xml/, 0],
    ['bad ova.xml', await tarOf([['ova.xml', Buffer.from('<value><struct>')]]), /bad ova.xml/, 512],
    [
      'missing checksum',
      await tarOf([
        ['ova.xml', Buffer.from(xml)],
        ['Ref:003/00000000', zero],
        ['Ref:003/00000001', zero],
      ]),
      /expected the checksum/,
      ovaSize + 512 + MiB,
    ],
    [
      'wrong disk',
      await tarOf([
        ['ova.xml', Buffer.from(xml)],
        ['Ref:005/00000000', zero],
      ]),
      /expected a chunk of Ref:003/,
      ovaSize,
    ],
  ]
  for (const [name, bytes, message, offset] of cases) {
    error = await streamError(readAll(bytes))
    t.match(error.message, message, name)
    t.equal(error.data?.['offset'], offset, name)
  }
  const ova = await tarOf([['vm.ovf', Buffer.from('<Envelope/>')]])
  t.ok(isOva(ova))
  error = await streamError(readAll(ova))
  t.equal(error.code, 'UNSUPPORTED_MEDIA_TYPE')
})

t.test('older .checksum (SHA-1) members and keep-alive gaps follow XAPI arithmetic', async (t) => {
  const d = description([3 * MiB])
  const { xml } = buildOvaXml(d)
  const { createHash } = await import('node:crypto')
  const sha = (b: Buffer) => Buffer.from(createHash('sha1').update(b).digest('hex'))
  const one = Buffer.alloc(MiB, 1)
  const three = Buffer.alloc(MiB, 3)
  // A zero-length keep-alive chunk takes index 1; the next member, index 3, lands at 1 MiB (not 3 MiB) + a skipped gap.
  const bytes = await tarOf([
    ['ova.xml', Buffer.from(xml)],
    ['Ref:003/00000000', one],
    ['Ref:003/00000000.checksum', sha(one)],
    ['Ref:003/00000001', Buffer.alloc(0)],
    ['Ref:003/00000001.checksum', sha(Buffer.alloc(0))],
    ['Ref:003/00000003', three],
    ['Ref:003/00000003.checksum', sha(three)],
  ])
  const reader = await openXvaStream(sliced(bytes, 4096))
  const blocks = await drain(reader.blocks)
  t.same(
    blocks.map((b) => b.index),
    [0, 1],
  )
  t.equal(blocks[0]?.data[0], 1)
  t.equal(blocks[0]?.data[MiB], 0, 'index 2 was skipped: 1 MiB of zeros')
  t.equal(blocks[1]?.data[0], 3, 'index 3 lands at 2 MiB')
})

/** An importer written independently with Python's tarfile, following XAPI's rules (notes 2.3, 7). */
const PYTHON_IMPORTER = `
import sys, tarfile, xxhash, hashlib, xml.etree.ElementTree as ET
def value(v):
    kids = list(v)
    if not kids: return v.text or ''
    k = kids[0]
    if k.tag == 'struct': return {m.find('name').text: value(m.find('value')) for m in k}
    if k.tag == 'array': return [value(x) for x in k.find('data')]
    return k.text
tar = tarfile.open(sys.argv[1], 'r|*')
members = iter(tar)
first = next(members)
assert first.name == 'ova.xml', first.name
doc = value(ET.fromstring(tar.extractfile(first).read()))
objs = {o['id']: o for o in doc['objects']}
vm = next(o for o in doc['objects'] if o['class'] == 'VM')['snapshot']
vdis = sorted(objs[objs[b]['snapshot']['VDI']]['id'] for b in vm['VBDs'])
for ref in vdis:
    size = int(objs[ref]['snapshot']['virtual_size'])
    out = bytearray(size)
    offset, prev, first_len = 0, -1, None
    while offset < size:
        m = next(members)
        assert m.name.startswith(ref + '/'), m.name
        index = int(m.name.split('/')[1])
        data = tar.extractfile(m).read()
        c = next(members)
        digest = tar.extractfile(c).read().decode()
        assert c.name == m.name + '.xxhash' and digest == '%016X' % xxhash.xxh64_intdigest(data), c.name
        if first_len is None: first_len = len(data)
        offset += (index - prev - 1) * first_len
        out[offset:offset + len(data)] = data
        offset += len(data)
        prev = index
    sys.stdout.buffer.write(hashlib.sha1(out).hexdigest().encode() + b'\\n')
`

t.test("an independent Python importer following XAPI's rules reads the XVA", async (t) => {
  const { createHash } = await import('node:crypto')
  const dir = tempDir()
  t.teardown(dir.cleanup)
  const path = join(dir.path, 'vm.xva.gz')
  await pipeline(Readable.from(encodeXva(desc, contents())), compressor('gzip'), (await import('node:fs')).createWriteStream(path))
  const result = run('/usr/bin/python3', ['-c', PYTHON_IMPORTER, path])
  t.equal(result.status, 0, result.stderr)
  t.same(
    result.stdout.toString().trim().split('\n'),
    disks.map((disk) => createHash('sha1').update(rawOf(disk)).digest('hex')),
  )
})

t.test('release: each block once, only when no piece cut from it is in hand or still to come', async (t) => {
  const content = disks.map((d) => ({
    size: d.size,
    allocated: d.allocated,
    // Each block in a buffer of its own, so a piece tells its block by its ArrayBuffer.
    blocks: (async function* () {
      for await (const block of d.blocks()) yield { index: block.index, data: Buffer.from(block.data) }
    })(),
  }))
  const released = new Set<ArrayBufferLike>()
  let inHand: Buffer | undefined
  let early = 0
  // Both archives carry the same timestamps, however far apart a busy machine runs them.
  const now = new Date('2026-11-24T12:00:00Z')
  const pieces = encodeXva(desc, content, {
    now,
    release: (data) => {
      t.notOk(released.has(data.buffer), 'released once')
      released.add(data.buffer)
      if (inHand?.buffer === data.buffer) early++
    },
  })
  let late = 0
  const parts: Buffer[] = []
  for await (const piece of pieces) {
    if (released.has(piece.buffer)) late++
    inHand = piece
    parts.push(Buffer.from(piece))
    await new Promise((resolve) => setImmediate(resolve))
    inHand = undefined
  }
  t.equal(early + late, 0, 'no block released while a piece of it was in hand or still to come')
  t.equal(released.size, disks.reduce((sum, d) => sum + d.allocated.length, 0), 'every allocated block released')
  t.ok(Buffer.concat(parts).equals(await collect(encodeXva(desc, contents(), { now }))), 'the archive is the same')
})
