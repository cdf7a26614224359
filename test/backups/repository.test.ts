import t from 'tap'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, writeFileSync, writeSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { gunzipSync } from 'node:zlib'
import { archiveId, formatBackupTimestamp, parseArchiveId, parseBackupTimestamp, parseVhdPath, vhdPath } from '../../src/backups/layout.js'
import { isParsed, parseBackupMetadata } from '../../src/backups/metadata.js'
import { repositoryPath } from '../../src/backups/confine.js'
import { LocalRepository, storageError } from '../../src/backups/repository.js'
import { oldEntries } from '../../src/backups/retention.js'
import { BLOCK_SIZE } from '../../src/formats/blocks.js'
import { openXvaStream } from '../../src/formats/xva/xva-reader.js'
import { packageRoot } from '../../src/paths.js'
import { FIXTURE, fixtureBlock, writeFixtureRepository } from '../helpers/backup-fixture.js'
import { filesUnder, run, tempDir, VPC_OPTS } from '../helpers/disks.js'

const FIXTURE_DIR = join(packageRoot, 'fixtures', 'backup-repository')
const VM_DIR = join('xo-vm-backups', FIXTURE.vm)
const CHAIN_DIR = join(VM_DIR, 'vdis', FIXTURE.job, FIXTURE.liveVdi)
const ts = (i: 0 | 1 | 2): string => formatBackupTimestamp(FIXTURE.timestamps[i])

/** The disk's content at a point of the fixture. */
function contentAt(point: 0 | 1 | 2): Buffer {
  const raw = Buffer.alloc(FIXTURE.size)
  for (const [index, seed] of FIXTURE.blocks[point]) fixtureBlock(seed).copy(raw, index * BLOCK_SIZE)
  return raw
}

function copyOfFixture(t: { teardown: (fn: () => void) => void }): string {
  const folder = tempDir()
  t.teardown(folder.cleanup)
  cpSync(FIXTURE_DIR, folder.path, { recursive: true })
  return folder.path
}

async function readChain(repository: LocalRepository, path: string, ref: string): Promise<Buffer> {
  const entry = (await repository.listArchives(FIXTURE.vm)).find((candidate) => candidate.metadataPath === path)
  if (entry === undefined) throw new Error(`no archive ${path}`)
  const disk = await repository.openDisk(path, entry.metadata, ref)
  try {
    const raw = Buffer.alloc(disk.chain.size)
    for (const index of disk.chain.allocatedBlocks()) (await disk.chain.readBlock(index)).copy(raw, index * BLOCK_SIZE)
    return raw
  } finally {
    await disk.close()
  }
}

t.test('layout: timestamps, archive ids and disk paths as the reference forms them', async (t) => {
  t.equal(formatBackupTimestamp(Date.UTC(2025, 8, 18, 13, 29, 42, 123)), '20250918T132942Z')
  t.equal(parseBackupTimestamp('20250918T132942Z'), Date.UTC(2025, 8, 18, 13, 29, 42))
  for (const bad of ['20250918T132942', '20251318T132942Z', '20250931T000000Z', '2025-09-18T13:29:42Z', '']) t.equal(parseBackupTimestamp(bad), undefined, bad)
  const vm = FIXTURE.vm
  const id = archiveId('repo', `/xo-vm-backups/${vm}/20250918T132942Z.json`)
  t.equal(id, `repo//xo-vm-backups/${vm}/20250918T132942Z.json`)
  t.same(parseArchiveId(id), { repositoryId: 'repo', vmUuid: vm, ts: '20250918T132942Z', metadataPath: `/xo-vm-backups/${vm}/20250918T132942Z.json` })
  t.same(parseArchiveId(`repo/xo-vm-backups///${vm}//20250918T132942Z.json`)?.metadataPath, `/xo-vm-backups/${vm}/20250918T132942Z.json`, 'repeated slashes, as the reference accepts')
  for (const bad of [`repo//xo-vm-backups/../20250918T132942Z.json`, `repo//xo-vm-backups/${vm}/20250918T132942Z.xva`, `repo//xo-vm-backups/not-a-uuid-at-all-not-a-uuid-at-all-xx/20250918T132942Z.json`, `repo//xo-vm-backups/${vm.toUpperCase()}/20250918T132942Z.json`, `//xo-vm-backups/${vm}/20250918T132942Z.json`]) {
    t.equal(parseArchiveId(bad), undefined, bad)
  }
  t.equal(vhdPath(FIXTURE.job, FIXTURE.liveVdi, '20250918T132942Z'), `vdis/${FIXTURE.job}/${FIXTURE.liveVdi}/20250918T132942Z.vhd`)
  t.throws(() => vhdPath('../x', FIXTURE.liveVdi, '20250918T132942Z'))
  t.throws(() => vhdPath(FIXTURE.job.toUpperCase(), FIXTURE.liveVdi, '20250918T132942Z'), 'a UUID is spelt in lower case, as the folders are')
  t.same(parseVhdPath(`vdis/${FIXTURE.job}/${FIXTURE.liveVdi}/a.vhd`), { jobId: FIXTURE.job, vdiUuid: FIXTURE.liveVdi, name: 'a.vhd' })
  for (const bad of ['vdis/../x/a.vhd', '/etc/passwd', 'vdis/a/b/c/d.vhd', 'vdis/a/b/..']) t.equal(parseVhdPath(bad), undefined, bad)
})

t.test('repository URLs: only file:///absolute/path', async (t) => {
  t.equal(repositoryPath('file:///var/backups'), '/var/backups')
  t.equal(repositoryPath('file:///var/backups?useVhdDirectory=true'), '/var/backups')
  for (const bad of ['smb://host/share', 's3://bucket/x', 'file://host/x', 'not a url']) t.throws(() => repositoryPath(bad), { code: 'INVALID_PARAMETERS' }, bad)
})

t.test('retention keeps the newest', async (t) => {
  t.same(oldEntries(2, [1, 2, 3, 4]), [1, 2])
  t.same(oldEntries(5, [1, 2]), [])
  t.same(oldEntries(0, [1, 2]), [1, 2])
})

t.test('metadata: what is not an archive is told apart', async (t) => {
  t.match(parseBackupMetadata('{'), { error: /not JSON/ })
  t.match(parseBackupMetadata('[]'), { error: 'not an object' })
  t.match(parseBackupMetadata(JSON.stringify({ jobId: 'j', timestamp: 1, mode: 'mirror', vm: {}, vmSnapshot: {} })), { error: /neither full nor delta/ })
  const old = parseBackupMetadata(JSON.stringify({ jobId: 'j', timestamp: 1, mode: 'delta', vm: {}, vmSnapshot: {}, vhds: { r: 'vdis/a/b/c.vhd' }, vdis: {}, vbds: {}, isVhdDifferencing: { r: 1 } }))
  t.ok(isParsed(old) && old.mode === 'delta' && old.isVhdDifferencing['r'] === true, '0/1 booleans of old XenServer versions are read')
})

t.test('the fixture is what Keel writes, and outside tools read it', async (t) => {
  const again = tempDir()
  t.teardown(again.cleanup)
  await writeFixtureRepository(again.path)
  t.same(filesUnder(again.path), filesUnder(FIXTURE_DIR))
  for (const file of filesUnder(FIXTURE_DIR)) t.ok(readFileSync(join(again.path, file)).equals(readFileSync(join(FIXTURE_DIR, file))), `${file} is written the same again`)

  const xva = readFileSync(join(FIXTURE_DIR, VM_DIR, `${ts(0)}.xva`))
  t.equal(readFileSync(join(FIXTURE_DIR, VM_DIR, `${ts(0)}.xva.checksum`), 'utf8'), `$1$$${createHash('md5').update(xva).digest('hex')}`)
  t.equal(run('tar', ['tzf', join(FIXTURE_DIR, VM_DIR, `${ts(0)}.xva`)]).stdout.toString().split('\n')[0], 'ova.xml')
  const cache = JSON.parse(gunzipSync(readFileSync(join(FIXTURE_DIR, VM_DIR, 'cache.json.gz'))).toString()) as Record<string, { _filename: string; id: string }>
  t.same(Object.keys(cache).sort(), [0, 1, 2].map((i) => `/xo-vm-backups/${FIXTURE.vm}/${ts(i as 0 | 1 | 2)}.json`))
  for (const [key, value] of Object.entries(cache)) t.match(value, { _filename: key, id: key })

  const child = join(FIXTURE_DIR, CHAIN_DIR, `${ts(2)}.vhd`)
  t.match(run('vhdiinfo', [child]).stdout.toString(), new RegExp(`Parent filename\\s*:\\s*${ts(1)}\\.vhd`), 'vhdiinfo names the parent')
  const script = `
import pyvhdi, sys
child = pyvhdi.file(); child.open(sys.argv[1])
parent = pyvhdi.file(); parent.open(sys.argv[2]); child.set_parent(parent)
sys.stdout.buffer.write(child.read_buffer_at_offset(child.get_media_size(), 0))
`
  const read = run('/usr/bin/python3', ['-c', script, child, join(FIXTURE_DIR, CHAIN_DIR, `${ts(1)}.vhd`)])
  t.equal(read.status, 0, read.stderr)
  t.ok(read.stdout.equals(contentAt(2)), 'libvhdi reads the chain as the last point')
  const out = tempDir()
  t.teardown(out.cleanup)
  const converted = run('qemu-img', ['convert', '-O', 'raw', '--image-opts', VPC_OPTS(join(FIXTURE_DIR, CHAIN_DIR, `${ts(1)}.vhd`)), join(out.path, 'base.raw')])
  t.equal(converted.status, 0, converted.stderr)
  t.ok(readFileSync(join(out.path, 'base.raw')).equals(contentAt(1)), 'qemu-img reads the full VHD as the middle point')
})

t.test('the fixture lists and reads back', async (t) => {
  const root = copyOfFixture(t)
  const repository = new LocalRepository(root, [root])
  t.same(await repository.status(), { ok: true })
  const archives = await repository.listArchives()
  t.same(archives.map((entry) => [entry.metadata.mode, entry.metadata.timestamp]), [['full', FIXTURE.timestamps[0]], ['delta', FIXTURE.timestamps[1]], ['delta', FIXTURE.timestamps[2]]])
  const [full, base, delta] = archives
  if (full?.metadata.mode !== 'full' || base?.metadata.mode !== 'delta' || delta?.metadata.mode !== 'delta') throw new Error('unexpected fixture')
  t.same(delta.metadata.isVhdDifferencing, { [Object.keys(delta.metadata.vhds)[0] as string]: true })

  const reader = await openXvaStream(Readable.from(await repository.openXva(full.metadataPath, full.metadata)).pipe((await import('node:zlib')).createGunzip()))
  const raw = Buffer.alloc(FIXTURE.size)
  for await (const block of reader.blocks) block.data.copy(raw, block.index * BLOCK_SIZE)
  t.ok(raw.equals(contentAt(0)), 'the full archive holds the first point')
  const ref = Object.keys(delta.metadata.vhds)[0] as string
  t.ok((await readChain(repository, base.metadataPath, Object.keys(base.metadata.vhds)[0] as string)).equals(contentAt(1)))
  t.ok((await readChain(repository, delta.metadataPath, ref)).equals(contentAt(2)))
  await t.rejects(repository.openDisk(full.metadataPath, full.metadata, ref), { code: 'INVALID_PARAMETERS' })
})

t.test('deleting the base of a chain merges it into the archive that depends on it', async (t) => {
  const root = copyOfFixture(t)
  const repository = new LocalRepository(root, [root])
  const [, base, delta] = await repository.listArchives()
  if (base === undefined || delta === undefined || delta.metadata.mode !== 'delta') throw new Error('unexpected fixture')
  const ref = Object.keys(delta.metadata.vhds)[0] as string
  await repository.deleteArchive(base.metadataPath)
  t.same(readdirSync(join(root, CHAIN_DIR)), [`${ts(2)}.vhd`], 'one file, under the kept archive name')
  const kept = (await repository.listArchives()).at(-1)
  t.equal(kept?.metadataPath, delta.metadataPath)
  t.same(kept?.metadata.mode === 'delta' && kept.metadata.isVhdDifferencing, { [ref]: false }, 'its disk is whole now')
  t.ok((await readChain(repository, delta.metadataPath, ref)).equals(contentAt(2)), 'it still reads as the last point')
  const out = join(root, 'merged.raw')
  const converted = run('qemu-img', ['convert', '-O', 'raw', '--image-opts', VPC_OPTS(join(root, CHAIN_DIR, `${ts(2)}.vhd`)), out])
  t.equal(converted.status, 0, converted.stderr)
  t.ok(readFileSync(out).equals(contentAt(2)), 'qemu-img reads the merged disk alone as the last point')
  const cache = JSON.parse(gunzipSync(readFileSync(join(root, VM_DIR, 'cache.json.gz'))).toString()) as Record<string, unknown>
  t.equal(Object.keys(cache).length, 2, 'the cache follows')
  await t.rejects(repository.deleteArchive(base.metadataPath), { code: 'NO_SUCH_OBJECT' })

  await repository.deleteArchive(delta.metadataPath)
  t.same(readdirSync(join(root, CHAIN_DIR)), [], 'the last disk of a chain goes with its archive')
})

t.test('nothing half-written is ever visible', async (t) => {
  const root = copyOfFixture(t)
  const repository = new LocalRepository(root, [root])
  const before = filesUnder(root)
  const [, , delta] = await repository.listArchives()
  if (delta?.metadata.mode !== 'delta') throw new Error('unexpected fixture')
  const { size: _, vhds: __, isVhdDifferencing: ___, ...metadata } = delta.metadata
  async function* broken(): AsyncGenerator<Buffer> {
    yield Buffer.alloc(4096, 1)
    throw new Error('the source disconnected')
  }
  await t.rejects(repository.writeDelta({ ...metadata, timestamp: Date.UTC(2026, 0, 4) }, [{ vdiRef: 'OpaqueRef:x', liveVdiUuid: FIXTURE.liveVdi, vhd: broken(), differencing: false }]), /disconnected/)
  t.same(filesUnder(root), before, 'a broken disk stream leaves nothing, not even a temporary file')
  const full = (await repository.listArchives())[0]
  if (full?.metadata.mode !== 'full') throw new Error('unexpected fixture')
  await t.rejects(repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 5) }, Readable.from([Buffer.alloc(3000, 7)])), { code: 'INVALID_DISK_STREAM' })
  t.same(filesUnder(root), before, 'an XVA that is not whole is refused and removed')
  await t.rejects(repository.writeFull(full.metadata, Readable.from([Buffer.alloc(0)])), { code: 'INCORRECT_STATE' }, 'an archive is never written over')
  t.same(filesUnder(root), before)
  // Cut after several MiB: writes of the archive are in flight when the source fails.
  async function* cut(what: string): AsyncGenerator<Buffer> {
    for (let i = 0; i < 5; i++) yield Buffer.alloc(1024 * 1024 + 512, i)
    throw new Error(`${what} stopped`)
  }
  const archives = (await repository.listArchives()).map((entry) => entry.metadataPath)
  await t.rejects(repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 6) }, cut('the XVA'), () => 'd41d8cd98f00b204e9800998ecf8427e'), /the XVA stopped/)
  t.same(filesUnder(root), before, 'an XVA cut mid-write leaves nothing, not even a temporary file')
  await t.rejects(repository.writeDelta({ ...metadata, timestamp: Date.UTC(2026, 0, 6) }, [{ vdiRef: 'OpaqueRef:x', liveVdiUuid: FIXTURE.liveVdi, vhd: cut('the VHD'), differencing: false }]), /the VHD stopped/)
  t.same(filesUnder(root), before, 'so does a VHD')
  t.same((await repository.listArchives()).map((entry) => entry.metadataPath), archives, 'no archive listed but the ones before')

  writeFileSync(join(root, VM_DIR, `.${Date.now()}.20260106T000000Z.xva`), 'left by a crash')
  writeFileSync(join(root, VM_DIR, '20260107T000000Z.xva'), 'data whose metadata never came')
  writeFileSync(join(root, CHAIN_DIR, '20260108T000000Z.vhd'), Buffer.alloc(0))
  writeFileSync(join(root, CHAIN_DIR, `.${Date.now()}.20260108T000000Z.vhd`), 'left by a crash')
  writeFileSync(join(root, VM_DIR, '.0123456789ab.tmp'), 'a replacement cut short')
  await repository.clean()
  t.same(filesUnder(root), before, 'clean removes what a run cut short left')
})

t.test('an archive’s data is synced before anything names it, and a failed sync leaves nothing', async (t) => {
  const root = copyOfFixture(t)
  const repository = new LocalRepository(root, [root])
  const full = (await repository.listArchives())[0]
  if (full?.metadata.mode !== 'full') throw new Error('unexpected fixture')
  const handle = await open(root, 'r')
  const prototype = Object.getPrototypeOf(handle) as FileHandle
  await handle.close()
  const datasync = prototype.datasync
  t.teardown(() => {
    prototype.datasync = datasync
  })
  // At each sync of an archive's data, the names in its folder that a reader could find it by.
  const named: string[][] = []
  let failing = false
  prototype.datasync = function (this: FileHandle): Promise<void> {
    named.push(readdirSync(join(root, VM_DIR)).filter((name) => /^2026010[56]/.test(name)))
    if (failing) return Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    return datasync.call(this)
  }
  const xva = (): Readable => Readable.from([Buffer.alloc(4096)])
  await repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 5) }, xva())
  t.same(named, [[]], 'one sync of the data, before any name of the archive exists')
  t.same(readdirSync(join(root, VM_DIR)).filter((name) => /^2026010[56]/.test(name)).sort(), ['20260105T000000Z.json', '20260105T000000Z.xva', '20260105T000000Z.xva.checksum'])

  const before = filesUnder(root)
  const archives = (await repository.listArchives()).map((entry) => entry.metadataPath)
  failing = true
  await t.rejects(repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 6) }, xva()), { code: 'EIO' })
  t.same(filesUnder(root), before, 'nothing is left, not even a temporary file')
  t.same((await repository.listArchives()).map((entry) => entry.metadataPath), archives, 'no archive listed but the ones before')
})

t.test('an archive its producer writes into the file itself is named once synced; a failed write names nothing', async (t) => {
  const root = copyOfFixture(t)
  const repository = new LocalRepository(root, [root])
  const full = (await repository.listArchives())[0]
  if (full?.metadata.mode !== 'full') throw new Error('unexpected fixture')
  const xva = readFileSync(join(root, VM_DIR, full.metadata.xva))
  const md5 = createHash('md5').update(xva).digest('hex')
  const given: number[] = []
  // As a worker does (workers/file-output.ts): positional writes into the descriptor it is given.
  const fill = async ({ fd, syncEvery }: { fd: number; syncEvery: number }): Promise<number> => {
    given.push(syncEvery)
    return writeSync(fd, xva, 0, xva.length, 0)
  }
  await repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 5) }, fill, () => md5)
  t.ok(given.length === 1 && (given[0] ?? 0) > 0, 'the producer is told how often to start a sync')
  t.ok(readFileSync(join(root, VM_DIR, '20260105T000000Z.xva')).equals(xva), 'the archive as written')
  t.equal(readFileSync(join(root, VM_DIR, '20260105T000000Z.xva.checksum'), 'utf8'), `$1$$${md5}`, 'its checksum, the MD5 the producer gave')

  const before = filesUnder(root)
  const archives = (await repository.listArchives()).map((entry) => entry.metadataPath)
  const failing = (code: string) => async ({ fd }: { fd: number }): Promise<number> => {
    writeSync(fd, xva, 0, xva.length, 0)
    throw Object.assign(new Error(`${code}: write`), { code })
  }
  await t.rejects(repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 6) }, failing('ENOSPC'), () => md5), { code: 'INCORRECT_STATE', data: { actual: 'full' } }, 'a full disk')
  t.same(filesUnder(root), before, 'nothing is left, not even a temporary file')
  await t.rejects(repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 6) }, failing('EIO'), () => md5), { code: 'EIO' }, 'a failed write or sync')
  t.same(filesUnder(root), before, 'nothing is left')
  t.same((await repository.listArchives()).map((entry) => entry.metadataPath), archives, 'no archive listed but the ones before')
})

t.test('clean leaves what Keel did not write, and never deletes through a link', async (t) => {
  const root = copyOfFixture(t)
  const repository = new LocalRepository(root, [root])
  const away = tempDir()
  t.teardown(away.cleanup)
  const outside = away.path
  // Outside the repository, names clean would remove inside it: a temporary file, an XVA and a disk no metadata names.
  const otherVm = '0d6c1b9e-7a1f-4c3e-9b2d-5f4e3a2b1c0d'
  const otherJob = '7c5b4a39-2e1d-4f0c-8b9a-6d5c4b3a2f1e'
  mkdirSync(join(outside, 'vm'))
  writeFileSync(join(outside, 'vm', '.0123456789ab.tmp'), 'not Keel’s')
  writeFileSync(join(outside, 'vm', '20260107T000000Z.xva'), 'not Keel’s')
  mkdirSync(join(outside, 'job', FIXTURE.liveVdi), { recursive: true })
  writeFileSync(join(outside, 'job', FIXTURE.liveVdi, '20260108T000000Z.vhd'), '')
  symlinkSync(join(outside, 'vm'), join(root, 'xo-vm-backups', otherVm))
  symlinkSync(join(outside, 'job'), join(root, VM_DIR, 'vdis', otherJob))
  symlinkSync(join(outside, 'vm', '.0123456789ab.tmp'), join(root, VM_DIR, '.abcdefabcdef.tmp'))
  symlinkSync(join(outside, 'vm', '20260107T000000Z.xva'), join(root, VM_DIR, '20260109T000000Z.xva'))
  const outsideBefore = filesUnder(outside)
  // Inside it, what another tool put there: files and folders whose names Keel's layout does not give.
  const foreign = [join(VM_DIR, 'notes.txt'), join(VM_DIR, '.keep'), join(VM_DIR, '.snapshot', 'data'), join(VM_DIR, 'extra', 'a.xva'), join(CHAIN_DIR, 'README'), join(CHAIN_DIR, 'base.vhd'), join(CHAIN_DIR, '.partial')]
  for (const path of foreign) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), 'kept')
  }
  const links = [join('xo-vm-backups', otherVm), join(VM_DIR, 'vdis', otherJob), join(VM_DIR, '.abcdefabcdef.tmp'), join(VM_DIR, '20260109T000000Z.xva')]

  await repository.clean()
  for (const path of foreign) t.equal(readFileSync(join(root, path), 'utf8'), 'kept', `${path} is left`)
  for (const path of links) t.ok(existsSync(join(root, path)), `the link ${path} is left, and what it points to`)
  t.same(filesUnder(outside), outsideBefore, 'nothing outside the repository was removed')
  t.equal((await repository.listArchives(FIXTURE.vm)).length, 3, 'the archives are whole')
})

t.test('a link swapped in after the repository was opened: reads and writes are refused, nothing changes outside', async (t) => {
  const folder = tempDir()
  t.teardown(folder.cleanup)
  const base = realpathSync(folder.path)
  const roots = join(base, 'roots')
  const root = join(roots, 'repository')
  const outside = join(base, 'outside')
  cpSync(FIXTURE_DIR, root, { recursive: true })
  mkdirSync(outside)
  const repository = new LocalRepository(root, [roots])
  const [full] = await repository.listArchives()
  if (full?.metadata.mode !== 'full') throw new Error('unexpected fixture')

  renameSync(join(root, 'xo-vm-backups'), join(outside, 'xo-vm-backups'))
  symlinkSync(join(outside, 'xo-vm-backups'), join(root, 'xo-vm-backups'))
  const before = filesUnder(outside)
  const refused = { code: 'REPOSITORY_OUTSIDE_ROOTS', data: { url: `file://${root}`, rootCount: 1 } }
  await t.rejects(repository.writeFull({ ...full.metadata, timestamp: Date.UTC(2026, 0, 5) }, Readable.from([Buffer.alloc(4096)])), refused, 'an archive write')
  await t.rejects(repository.deleteArchive(full.metadataPath), refused, 'a delete')
  await t.rejects(repository.clean(), refused, 'the clean-up')
  await t.rejects(repository.listArchives(), refused, 'a listing')
  await t.rejects(repository.openXva(full.metadataPath, full.metadata), refused, 'a restore’s read')
  t.same(filesUnder(outside), before, 'nothing was written or removed outside')

  renameSync(root, join(roots, 'moved'))
  symlinkSync(outside, root)
  await t.rejects(repository.benchmark(), refused, 'the benchmark, once the folder itself is a link out')
  t.same(filesUnder(outside), before)
})

t.test('a full or read-only repository is named as such in the error a run reports', async (t) => {
  const errno = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: from the file system`), { code })
  t.match(storageError(errno('ENOSPC'), '/backups'), { code: 'INCORRECT_STATE', message: 'the backup repository /backups is full', data: { actual: 'full' } })
  t.match(storageError(errno('EDQUOT'), '/backups'), { code: 'INCORRECT_STATE', message: /is full/ })
  t.match(storageError(errno('EROFS'), '/backups'), { code: 'INCORRECT_STATE', message: 'the backup repository /backups is not writable' })
  const other = errno('EIO')
  t.equal(storageError(other, '/backups'), other, 'other errors pass as they are')
  const broken = new Error('the source disconnected')
  t.equal(storageError(broken, '/backups'), broken)
})

t.test('status says why a folder cannot be used', async (t) => {
  const folder = tempDir()
  t.teardown(folder.cleanup)
  t.match(await new LocalRepository(join(folder.path, 'missing'), [folder.path]).status(), { ok: false, reason: /does not exist/ })
  writeFileSync(join(folder.path, 'file'), '')
  t.match(await new LocalRepository(join(folder.path, 'file'), [folder.path]).status(), { ok: false, reason: /not a folder/ })
  const rates = await new LocalRepository(folder.path, [folder.path]).benchmark()
  t.ok(rates.readRate > 0 && rates.writeRate > 0)
  t.same(readdirSync(folder.path), ['file'], 'the benchmark file is removed')
})
