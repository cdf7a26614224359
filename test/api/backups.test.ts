import t from 'tap'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { packageRoot } from '../../src/paths.js'
import { encodeVhdStream, planVhdStream } from '../../src/formats/vhd/stream-encoder.js'
import { collect, filesUnder, patternBlock, run } from '../helpers/disks.js'
import { demoIds, type DemoIds } from '../helpers/demo-lab.js'
import { openLines } from '../helpers/streams.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

const MiB = 1024 * 1024
const DISK_SIZE = 32 * MiB

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

async function bytesOf(server: TestServer, path: string): Promise<Buffer> {
  const response = await server.request(path)
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return Buffer.from(await response.arrayBuffer())
}

const shell = promisify(execFile)

/** For the XVA in `$1`: its md5sum, its first member, then per chunk its name, xxhsum's XXH64 and its `.xxhash` member. */
const TOOLS_ON_XVA = `set -e
md5sum "$1" | cut -d' ' -f1
tar tf "$1" | head -n 1
for member in $(tar tf "$1" | grep -E '/[0-9]{8}$'); do
  echo "$member $(tar xOf "$1" "$member" | xxhsum -H64 - | cut -d' ' -f1) $(tar xOf "$1" "$member.xxhash")"
done`

/** A folder for a repository in the server's default root (the data directory's `backups`). */
function repositoryFolder(server: TestServer, name: string): { path: string } {
  const path = join(server.dataDir, 'backups', name)
  mkdirSync(path)
  return { path }
}

async function created(server: TestServer, path: string, body: unknown): Promise<string> {
  const response = await server.json<{ id: string }>(path, jsonBody(body))
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body.id
}

async function diskOf(server: TestServer, vmId: string): Promise<string> {
  const vm = await server.json<{ $VBDs: string[] }>(`/rest/v0/vms/${vmId}`)
  for (const vbdId of vm.body.$VBDs) {
    const vbd = await server.json<{ VDI?: string; is_cd_drive: boolean }>(`/rest/v0/vbds/${vbdId}`)
    if (!vbd.body.is_cd_drive && vbd.body.VDI !== undefined) return vbd.body.VDI
  }
  throw new Error(`VM ${vmId} has no disk`)
}

async function smallVm(server: TestServer, demo: DemoIds, name: string): Promise<{ vm: string; disk: string }> {
  const response = await server.json<{ id: string }>(
    `/rest/v0/pools/${demo.pool}/actions/create_vm?sync=true`,
    jsonBody({ name_label: name, template: demo.template, vdis: [{ name_label: `${name} disk`, size: DISK_SIZE, sr: demo.defaultSr }] }),
  )
  if (response.status !== 201) throw new Error(JSON.stringify(response.body))
  return { vm: response.body.id, disk: await diskOf(server, response.body.id) }
}

/** Writes blocks of a disk with a differencing VHD over its current content (only those blocks change); returns the whole new content. */
async function writeBlocks(server: TestServer, disk: string, blocks: ReadonlyMap<number, Buffer>): Promise<Buffer> {
  const indexes = [...blocks.keys()].sort((a, b) => a - b)
  const patch = await collect(
    encodeVhdStream(
      planVhdStream({ size: DISK_SIZE, allocated: indexes, uuid: disk, parent: { uuid: disk, timestamp: 0, name: `${disk}.vhd` }, now: 0 }),
      (async function* () {
        for (const index of indexes) yield { index, data: blocks.get(index) as Buffer }
      })(),
    ),
  )
  const put = await server.request(`/rest/v0/vdis/${disk}.vhd`, { method: 'PUT', body: patch })
  if (put.status !== 204) throw new Error(`PUT: ${put.status} ${await put.text()}`)
  return bytesOf(server, `/rest/v0/vdis/${disk}.raw`)
}

async function runJob(server: TestServer, jobId: string): Promise<void> {
  const response = await server.request(`/rest/v0/backup-jobs/${jobId}/actions/run?sync=true`, { method: 'POST' })
  if (response.status !== 204) throw new Error(`run: ${response.status} ${await response.text()}`)
}

interface Archive {
  id: string
  mode: string
  timestamp: number
  chain?: string[]
  vm: { uuid: string }
}

async function archivesOf(server: TestServer, repository: string, vm?: string): Promise<Archive[]> {
  const listed = await server.json<Archive[]>(`/rest/v0/backup-archives?backup-repository=${repository}&fields=*`)
  return listed.body.filter((archive) => vm === undefined || archive.vm.uuid === vm).sort((a, b) => a.timestamp - b.timestamp)
}

async function restore(server: TestServer, archive: string, sr: string): Promise<Buffer> {
  const response = await server.json<{ id: string }>(`/rest/v0/backup-archives/${encodeURIComponent(archive)}/actions/restore?sync=true`, jsonBody({ sr }))
  if (response.status !== 201) throw new Error(`restore: ${response.status} ${JSON.stringify(response.body)}`)
  return bytesOf(server, `/rest/v0/vdis/${await diskOf(server, response.body.id)}.raw`)
}

t.test('backups over REST', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const folder = repositoryFolder(server, 'local')

  const repository = await created(server, '/rest/v0/backup-repositories', { name: 'local', url: `file://${folder.path}` })

  t.test('repositories: created usable, bad URLs refused, missing folders reported', async (t) => {
    const record = await server.json<{ enabled: boolean; error?: string; url: string }>(`/rest/v0/backup-repositories/${repository}`)
    t.match(record.body, { enabled: true, url: `file://${folder.path}` })
    t.equal(record.body.error, undefined)
    const bad = await server.json<{ code: string }>('/rest/v0/backup-repositories', jsonBody({ name: 'x', url: 'smb://host/share' }))
    t.equal(bad.status, 422)
    const missing = await created(server, '/rest/v0/backup-repositories', { name: 'gone', url: `file://${folder.path}/does-not-exist` })
    const gone = await server.json<{ error?: string }>(`/rest/v0/backup-repositories/${missing}`)
    t.type(gone.body.error, 'string', 'the record says why it cannot be used')
    t.equal((await server.json(`/rest/v0/backup-repositories/${missing}/health`)).status, 409)
    const benchmark = await server.json<{ success: boolean; readRate: number; writeRate: number }>(`/rest/v0/backup-repositories/${repository}/actions/benchmark?sync=true`, { method: 'POST' })
    t.equal(benchmark.status, 200)
    t.ok(benchmark.body.readRate > 0 && benchmark.body.writeRate > 0)
    t.equal((await server.json<{ benchmarks: unknown[] }>(`/rest/v0/backup-repositories/${repository}`)).body.benchmarks.length, 1)
    t.equal((await server.request(`/rest/v0/backup-repositories/${missing}/actions/forget?sync=true`, { method: 'POST' })).status, 204)
    t.equal((await server.json(`/rest/v0/backup-repositories/${missing}`)).status, 404)
  })

  t.test('a full job: one XVA per VM, restored byte for byte, retention, logs', async (t) => {
    const { vm, disk } = await smallVm(server, demo, 'full-source')
    const content = await writeBlocks(server, disk, new Map([[0, patternBlock(1)], [7, patternBlock(2)]]))
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'nightly', mode: 'full', compression: 'zstd', vms: { id: vm }, remotes: { id: repository }, settings: { '': { exportRetention: 2 } } })
    await runJob(server, job)
    const [archive] = await archivesOf(server, repository, vm)
    if (archive === undefined) throw new Error('no archive')
    t.equal(archive.mode, 'full')
    t.match(archive.id, new RegExp(`^${repository}//xo-vm-backups/${vm}/\\d{8}T\\d{6}Z\\.json$`))
    const files = filesUnder(join(folder.path, 'xo-vm-backups', vm))
    t.ok(files.some((name) => /^\d{8}T\d{6}Z\.xva$/.test(name)) && files.some((name) => name.endsWith('.xva.checksum')) && files.some((name) => name.endsWith('.json')), files.join(' '))
    const xva = files.find((name) => name.endsWith('.xva')) as string
    t.equal(run('zstd', ['-t', '-q', join(folder.path, 'xo-vm-backups', vm, xva)]).status, 0, 'zstd -t accepts the stored XVA')
    const stored = readFileSync(join(folder.path, 'xo-vm-backups', vm, xva))
    t.equal(readFileSync(join(folder.path, 'xo-vm-backups', vm, `${xva}.checksum`), 'utf8'), `$1$$${createHash('md5').update(stored).digest('hex')}`, 'the checksum (taken in the worker) is the stored file\'s MD5')
    t.ok((await restore(server, archive.id, demo.defaultSr)).equals(content), 'the restored disk is the backed-up one')

    const logs = await server.json<Array<{ jobId: string; status: string; tasks: Array<{ message: string; status: string; data: { id: string } }> }>>('/rest/v0/backup-logs?fields=*')
    const log = logs.body.find((entry) => entry.jobId === job)
    t.equal(log?.status, 'success')
    t.match(log?.tasks, [{ message: 'backup VM', status: 'success', data: { id: vm } }])
    const restores = await server.json<Array<{ data: { backupId: string }; status: string }>>('/rest/v0/restore-logs?fields=*')
    t.ok(restores.body.some((entry) => entry.data.backupId === archive.id && entry.status === 'success'))

    await runJob(server, job)
    await runJob(server, job)
    t.equal((await archivesOf(server, repository, vm)).length, 2, 'exportRetention 2 keeps the two newest')
    t.same(await server.json('/rest/v0/backup-archives').then((r) => r.body), [], 'no repository named, no archive')
  })

  t.test('a delta job: a full then differencing VHDs; every point of the chain restores exactly, also after retention merges', async (t) => {
    const { vm, disk } = await smallVm(server, demo, 'delta-source')
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'hourly', mode: 'delta', vms: { id: vm }, remotes: { id: repository }, settings: { '': { exportRetention: 3 } } })
    const states: string[] = []
    states.push(sha(await writeBlocks(server, disk, new Map([[0, patternBlock(10)], [3, patternBlock(11)]]))))
    await runJob(server, job)
    states.push(sha(await writeBlocks(server, disk, new Map([[3, patternBlock(12)]]))))
    await runJob(server, job)
    states.push(sha(await writeBlocks(server, disk, new Map([[9, patternBlock(13)]]))))
    await runJob(server, job)
    const archives = await archivesOf(server, repository, vm)
    t.equal(archives.length, 3)
    t.same(archives.map((archive) => archive.mode), ['delta', 'delta', 'delta'])
    t.equal(archives[2]?.chain?.length, 3, 'the last archive depends on the two before it')
    const vhds = filesUnder(join(folder.path, 'xo-vm-backups', vm, 'vdis'))
    t.equal(vhds.length, 3, vhds.join(' '))
    for (const vhd of vhds.slice(1)) {
      const info = run('vhdiinfo', [join(folder.path, 'xo-vm-backups', vm, 'vdis', vhd)])
      t.match(info.stdout.toString(), /Parent identifier/i, `${vhd} is differencing for vhdiinfo`)
    }
    const sizes = vhds.map((name) => statSync(join(folder.path, 'xo-vm-backups', vm, 'vdis', name)).size)
    t.ok((sizes[1] as number) < (sizes[0] as number), 'a delta holds only the changed blocks')
    for (const [i, archive] of archives.entries()) t.equal(sha(await restore(server, archive.id, demo.defaultSr)), states[i], `point ${i} restores exactly`)

    states.push(sha(await writeBlocks(server, disk, new Map([[1, patternBlock(14)]]))))
    await runJob(server, job)
    const kept = await archivesOf(server, repository, vm)
    t.equal(kept.length, 3, 'the oldest went')
    for (const [i, archive] of kept.entries()) t.equal(sha(await restore(server, archive.id, demo.defaultSr)), states[i + 1], `after the merge, point ${i + 1} restores exactly`)

    const middle = kept[1] as Archive
    t.equal((await server.request(`/rest/v0/backup-archives/${encodeURIComponent(middle.id)}`, { method: 'DELETE' })).status, 204)
    const left = await archivesOf(server, repository, vm)
    t.equal(left.length, 2)
    t.equal(sha(await restore(server, (left[1] as Archive).id, demo.defaultSr)), states[3], 'deleting a middle archive keeps the newest restorable')
  })

  t.test('schedules: cron checked, run answers with the task, forget refused while used', async (t) => {
    const { vm } = await smallVm(server, demo, 'scheduled')
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'weekly', mode: 'full', vms: { id: vm }, remotes: { id: repository } })
    const before = (await server.json('/rest/v0/schedules')).body
    const bad = await server.json<{ code: string }>('/rest/v0/schedules', jsonBody({ jobId: job, cron: '* * *' }))
    t.equal(bad.status, 422)
    const badZone = await server.json<{ code: string }>('/rest/v0/schedules', jsonBody({ jobId: job, cron: '0 3 * * *', timezone: 'Mars/Olympus' }))
    t.equal(badZone.status, 422)
    const upper = await server.json('/rest/v0/schedules', jsonBody({ jobId: job.toUpperCase(), cron: '0 3 * * *' }))
    t.equal(upper.status, 422, 'a job id is spelt as Keel gave it, in lower case')
    t.match(upper.body, { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.jobId' }] } })
    t.same((await server.json('/rest/v0/schedules')).body, before, 'none of the refused schedules was made')
    const schedule = await created(server, '/rest/v0/schedules', { jobId: job, cron: '0 3 * * 0', timezone: 'Europe/Paris', enabled: true })
    const started = await server.json<{ taskId: string }>(`/rest/v0/schedules/${schedule}/actions/run`, { method: 'POST' })
    t.equal(started.status, 202)
    t.equal(started.response.headers.get('location'), `/rest/v0/tasks/${started.body.taskId}`)
    const ended = await server.json<{ status: string }>(`/rest/v0/tasks/${started.body.taskId}?wait=true`)
    t.equal(ended.body.status, 'success')
    const forget = await server.json<{ code: string }>(`/rest/v0/backup-repositories/${repository}/actions/forget`, { method: 'POST' })
    t.equal(forget.status, 403, 'a repository a job writes to is not forgotten')
    t.equal((await server.request(`/rest/v0/schedules/${schedule}`, { ...jsonBody({ enabled: false }), method: 'PATCH' })).status, 204)
    t.equal((await server.request(`/rest/v0/backup-jobs/${job}`, { method: 'DELETE' })).status, 204)
    t.equal((await server.json(`/rest/v0/schedules/${schedule}`)).status, 404, "a job's schedules go with it")
  })

  t.test('VMs of one SR backed up side by side: snapshots, exports and removals interleave without losing a disk', async (t) => {
    const sources = await Promise.all([1, 2, 3, 4].map((i) => smallVm(server, demo, `parallel-${i}`)))
    const contents = await Promise.all(sources.map(({ disk }, i) => writeBlocks(server, disk, new Map([[i, patternBlock(20 + i)]]))))
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'parallel', mode: 'full', vms: { id: { __or: sources.map(({ vm }) => vm) } }, remotes: { id: repository }, settings: { '': { concurrency: 4 } } })
    await runJob(server, job)
    for (const [i, { vm }] of sources.entries()) {
      const [archive] = await archivesOf(server, repository, vm)
      if (archive === undefined) throw new Error(`no archive of ${vm}`)
      t.ok((await restore(server, archive.id, demo.defaultSr)).equals(contents[i] as Buffer), `VM ${i + 1} restores exactly`)
      // The plain archive is written from the blocks as read (in place): the outside tools agree with it.
      // One shell, not awaited synchronously: a blocked event loop lets the server's keep-alive sockets expire under the client.
      const vmFolder = join(folder.path, 'xo-vm-backups', vm)
      const xva = join(vmFolder, filesUnder(vmFolder).find((name) => name.endsWith('.xva')) as string)
      const [md5, first, ...chunks] = (await shell('sh', ['-c', TOOLS_ON_XVA, 'sh', xva])).stdout.trim().split('\n')
      t.equal(readFileSync(`${xva}.checksum`, 'utf8'), `$1$$${md5}`, `VM ${i + 1}: md5sum agrees with the .checksum`)
      t.equal(first, 'ova.xml', `VM ${i + 1}: tar lists ova.xml first`)
      const disagreeing = chunks.map((line) => line.split(' ')).filter(([, theirs, ours]) => theirs?.toUpperCase() !== ours)
      t.same(disagreeing, [], `VM ${i + 1}: xxhsum agrees on its ${chunks.length} chunks`)
      t.ok(chunks.length > 0)
    }
  })

  t.test('a running VM is backed up from a snapshot that is removed afterwards', async (t) => {
    const before = (await server.json<unknown[]>('/rest/v0/vm-snapshots?fields=id')).body.length
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'live', mode: 'full', vms: { id: demo.runningVm }, remotes: { id: repository } })
    await runJob(server, job)
    t.equal((await server.json<unknown[]>('/rest/v0/vm-snapshots?fields=id')).body.length, before)
    t.equal((await archivesOf(server, repository, demo.runningVm)).length, 1)
  })

  t.test('watch: jobs and their logs change live', async (t) => {
    const auth = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }
    const jobs = await openLines(`${server.url}/rest/v0/backup-jobs?ndjson=true&watch=true&fields=name`, auth)
    t.teardown(() => jobs.close())
    const logs = await openLines(`${server.url}/rest/v0/backup-logs?ndjson=true&watch=true&fields=jobId,status`, auth)
    t.teardown(() => logs.close())
    const { vm } = await smallVm(server, demo, 'watched')
    const job = await created(server, '/rest/v0/backup-jobs', { name: 'watched', mode: 'full', vms: { id: vm }, remotes: { id: repository } })
    t.same((await jobs.until(1))[0], ['update', { name: 'watched', href: `/rest/v0/backup-jobs/${job}` }], 'a new job shows as the reference shows additions')
    await runJob(server, job)
    const ended = (values: unknown[]): boolean => (values as Array<[string, { jobId: string; status: string }]>).some(([, log]) => log.jobId === job && log.status === 'success')
    let seen: unknown[] = []
    for (let count = 1; !ended(seen); count++) seen = await logs.until(count)
    t.match(seen[0], ['update', { jobId: job, status: 'pending' }], 'the run log is followed from its start to its end')
  })

  t.test('access: backup resources are checked', async (t) => {
    await created(server, '/rest/v0/users', { email: 'viewer@example.net', password: 'a-viewer-password' })
    const auth = basic('viewer@example.net', 'a-viewer-password')
    t.same((await server.json('/rest/v0/backup-jobs', { auth })).body, [], 'listings show nothing unreadable')
    const refused = await server.json<{ code: string }>('/rest/v0/backup-jobs', { auth, ...jsonBody({ name: 'x', mode: 'full', vms: {}, remotes: { id: repository } }) })
    t.equal(refused.status, 403)
    t.equal(refused.body.code, 'NOT_ENOUGH_PRIVILEGES')
  })

  t.test('a repository in the reference layout (the fixture) lists and restores', async (t) => {
    const copy = join(folder.path, 'fixture')
    mkdirSync(copy)
    cpSync(join(packageRoot, 'fixtures', 'backup-repository'), copy, { recursive: true })
    const fixture = await created(server, '/rest/v0/backup-repositories', { name: 'fixture', url: `file://${copy}` })
    const archives = await archivesOf(server, fixture)
    t.ok(archives.length >= 2, `${archives.length} archives`)
    for (const archive of archives) {
      const restored = await server.json<{ id: string }>(`/rest/v0/backup-archives/${encodeURIComponent(archive.id)}/actions/restore?sync=true`, jsonBody({ sr: demo.defaultSr }))
      t.equal(restored.status, 201, `${archive.id}: ${JSON.stringify(restored.body)}`)
    }
  })
})

t.test('a run cut by a stop ends interrupted after the restart, with no partial archive and no snapshot left', async (t) => {
  const first = await startServer()
  const demo = await demoIds(first)
  const folder = repositoryFolder(first, 'local')
  const repository = await created(first, '/rest/v0/backup-repositories', { name: 'local', url: `file://${folder.path}` })
  const { vm, disk } = await smallVm(first, demo, 'cut')
  await writeBlocks(first, disk, new Map([[0, patternBlock(5)]]))
  const snapshots = (await first.json<unknown[]>('/rest/v0/vm-snapshots?fields=id')).body.length
  const job = await created(first, '/rest/v0/backup-jobs', { name: 'cut', mode: 'full', vms: { id: vm }, remotes: { id: repository } })
  const started = await first.json<{ taskId: string }>(`/rest/v0/backup-jobs/${job}/actions/run`, { method: 'POST' })
  t.equal(started.status, 202)
  await first.close({ keepData: true })

  const second = await startServer({ dataDir: first.dataDir })
  t.teardown(async () => {
    await second.close()
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const logs = await second.json<Array<{ jobId: string; status: string }>>('/rest/v0/backup-logs?fields=jobId,status')
  const log = logs.body.find((entry) => entry.jobId === job)
  t.ok(log?.status === 'interrupted' || log?.status === 'success', `the run is ${log?.status}`)
  t.equal((await second.json<unknown[]>('/rest/v0/vm-snapshots?fields=id')).body.length, snapshots, 'no backup snapshot left')
  const archives = await archivesOf(second, repository, vm)
  t.ok(archives.length <= 1)
  const visible = filesUnder(folder.path).filter((name) => !name.split('/').some((part) => part.startsWith('.')))
  if (archives.length === 0) t.same(visible.filter((name) => name.startsWith('xo-vm-backups/') && !name.endsWith('cache.json.gz')), [], 'nothing of the cut run is visible')
  t.equal((await second.json<{ runId?: string }>(`/rest/v0/backup-jobs/${job}`)).body.runId, undefined, 'the job is idle again')
})
