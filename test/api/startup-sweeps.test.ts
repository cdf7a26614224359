import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { backupSnapshotMarks } from '../../src/backups/snapshot-marks.js'
import type { OperationContext, XoRecord } from '../../src/driver/types.js'
import { INSTALLATION_MARK } from '../../src/installation.js'
import { taskId } from '../../src/tasks/record.js'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer, type StartOptions, type TestServer } from '../helpers/server.js'

// Issue 26: a start-up sweep touches only what this installation owns. A pool
// may be shared with the reference (which names its backup snapshots as Keel
// does) and a database with other Keels.

type Obj = Record<string, unknown>

const REFERENCE_NAME = '[XO Backup nightly] staging-app'

const operation = (): OperationContext => ({ signal: new AbortController().signal, userId: '', progress: () => {} })

async function created(server: TestServer, path: string, body: unknown): Promise<string> {
  const response = await server.json<{ id: string }>(path, jsonBody(body))
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body.id
}

/** Restarts on the same data directory, which the last of the chain removes. */
async function restart(t: Test, server: TestServer, options: StartOptions = {}): Promise<TestServer> {
  await server.close({ keepData: true })
  const next = await startServer({ ...options, dataDir: server.dataDir, clock: server.clock })
  t.teardown(() => next.close())
  return next
}

t.test('issue 26: a backup snapshot that is not this installation\'s survives restarts; its own orphan does not', async (t) => {
  const first = await startServer()
  t.teardown(async () => {
    await first.close({ keepData: true })
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const demo = await demoIds(first)
  const { driver } = first.app
  const vm = driver.getObject(demo.haltedVm) as XoRecord
  const take = async (otherConfig?: Record<string, string>): Promise<string> => {
    const snapshot = await driver.perform(vm, 'snapshot', { name_label: REFERENCE_NAME, ...(otherConfig === undefined ? {} : { other_config: otherConfig }) }, operation())
    if (snapshot === undefined) throw new Error('no snapshot')
    return snapshot.id
  }
  const referenceKeys = { 'xo:backup:datetime': '20261122T020000Z', 'xo:backup:job': randomUUID(), 'xo:backup:schedule': randomUUID(), 'xo:backup:vm': vm.id }
  const survivors = {
    reference: await take(referenceKeys),
    unmarked: await take(),
    otherKeel: await take(backupSnapshotMarks(randomUUID(), { id: randomUUID() }, undefined, vm, first.clock.now)),
  }
  const orphan = await take(backupSnapshotMarks(first.app.installationId, { id: randomUUID() }, undefined, vm, first.clock.now))
  const installationId = first.app.installationId

  let server = first
  for (const round of [1, 2]) {
    server = await restart(t, server)
    t.equal(server.app.installationId, installationId, `restart ${round}: the same installation`)
    for (const [name, id] of Object.entries(survivors)) {
      const { status, body } = await server.json<{ name_label: string; other: Obj }>(`/rest/v0/vm-snapshots/${id}`)
      t.equal(status, 200, `restart ${round}: the ${name} snapshot is still there`)
      t.equal(body.name_label, REFERENCE_NAME)
    }
    t.match((await server.json<{ other: Obj }>(`/rest/v0/vm-snapshots/${survivors.reference}`)).body.other, referenceKeys, 'with its keys')
    t.equal((await server.json(`/rest/v0/vm-snapshots/${orphan}`)).status, 404, `restart ${round}: this installation's orphan is gone`)
  }
})

t.test('issue 26: a run marks its snapshot; a delta base survives the restart, and a client cannot forge the mark', async (t) => {
  const first = await startServer()
  t.teardown(async () => {
    await first.close({ keepData: true })
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const demo = await demoIds(first)
  // in the server's default repository root, removed with its data directory
  const folder = { path: join(first.dataDir, 'backups', 'local') }
  mkdirSync(folder.path)
  const vm = await created(first, `/rest/v0/pools/${demo.pool}/actions/create_vm?sync=true`, {
    name_label: 'marked',
    template: demo.template,
    vdis: [{ name_label: 'marked disk', size: 8 * 1024 * 1024, sr: demo.defaultSr }],
  })
  const repository = await created(first, '/rest/v0/backup-repositories', { name: 'local', url: `file://${folder.path}` })
  const job = await created(first, '/rest/v0/backup-jobs', { name: 'delta', mode: 'delta', vms: { id: vm }, remotes: { id: repository } })
  const ran = await first.request(`/rest/v0/backup-jobs/${job}/actions/run?sync=true`, { method: 'POST' })
  t.equal(ran.status, 204, await ran.text())
  const snapshotsOf = async (server: TestServer): Promise<Array<{ id: string; other: Obj }>> =>
    (await server.json<Array<{ id: string; $snapshot_of: string; other: Obj }>>('/rest/v0/vm-snapshots?fields=id,$snapshot_of,other')).body.filter((snapshot) => snapshot.$snapshot_of === vm)
  const [base] = await snapshotsOf(first)
  t.match(base?.other, { [INSTALLATION_MARK]: first.app.installationId, 'xo:backup:job': job, 'xo:backup:vm': vm, 'xo:backup:datetime': '20261122T120000Z' }, 'the mark beside the reference keys')

  const tasks = (await first.json<unknown[]>('/rest/v0/tasks')).body.length
  const forged = await first.json<Obj>(`/rest/v0/vms/${vm}/actions/snapshot?sync=true`, jsonBody({ name_label: REFERENCE_NAME, other_config: { [INSTALLATION_MARK]: first.app.installationId, 'xo:backup:job': job } }))
  t.equal(forged.status, 422)
  t.match(forged.body, { code: 'INVALID_PARAMETERS', data: { errors: [{ path: 'body.other_config' }] } })
  t.equal((await first.json<unknown[]>('/rest/v0/tasks')).body.length, tasks, 'no task started')
  t.equal((await snapshotsOf(first)).length, 1, 'nothing taken')

  const second = await restart(t, first)
  t.same((await snapshotsOf(second)).map((snapshot) => snapshot.id), [base?.id], 'the delta base is kept')
})

t.test('issue 26: a restart interrupts its own tasks and runs, and leaves another installation\'s as they are', async (t) => {
  const first = await startServer({ config: { tasks: { keep: 1 }, lab: { stepDelay: 1000 } } })
  t.teardown(async () => {
    await first.close({ keepData: true })
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const demo = await demoIds(first)
  const { db, installationId } = first.app
  const other = randomUUID()
  const now = first.clock.now

  const started = await first.json<Obj>(`/rest/v0/pools/${demo.pool}/actions/rolling_reboot`, { method: 'POST' })
  t.equal(started.status, 202)
  const ownTask = started.body['taskId'] as string
  const insertTask = db.prepare('INSERT INTO tasks (id, status, data, installation_id) VALUES (?, ?, ?, ?)')
  const insertedTask = (status: 'pending' | 'success', owner: string | null): string => {
    const id = taskId(now)
    insertTask.run(id, status, JSON.stringify({ id, type: 'task', properties: { name: 'elsewhere' }, start: now, updatedAt: now, status, ...(status === 'pending' ? {} : { end: now }) }), owner)
    return id
  }
  const foreignTasks = [insertedTask('pending', other), insertedTask('success', other), insertedTask('success', other)]
  // a row written before installations were recorded: this data directory's
  const legacyTask = insertedTask('pending', null)

  // in the server's default repository root, removed with its data directory
  const folder = { path: join(first.dataDir, 'backups', 'local') }
  mkdirSync(folder.path)
  const repository = await created(first, '/rest/v0/backup-repositories', { name: 'local', url: `file://${folder.path}` })
  // ours, ours from before installations were recorded, theirs
  const owners = [installationId, null, other]
  const jobs: string[] = []
  for (const name of ['ours', 'legacy', 'theirs']) jobs.push(await created(first, '/rest/v0/backup-jobs', { name, mode: 'full', vms: { id: demo.haltedVm }, remotes: { id: repository } }))
  const insertRecord = db.prepare('INSERT INTO backup_records (type, id, data, installation_id) VALUES (?, ?, ?, ?)')
  const logs = jobs.map((jobId, i) => {
    const id = String(now + i)
    const owner = owners[i] ?? null
    insertRecord.run('backup-log', id, JSON.stringify({ id, type: 'backup-log', message: 'backup', jobId, jobName: 'x', start: now, status: 'pending', data: { mode: 'full' }, tasks: [] }), owner)
    insertRecord.run('restore-log', id, JSON.stringify({ id, type: 'restore-log', message: 'restore', data: { backupId: 'x', jobId, srId: demo.defaultSr, time: now }, start: now, status: 'pending', tasks: [] }), owner)
    db.prepare("UPDATE backup_records SET data = json_set(data, '$.runId', ?) WHERE type = 'backup' AND id = ?").run(id, jobId)
    return id
  })
  const [ownLog, legacyLog, foreignLog] = logs as [string, string, string]
  const rowsOf = (server: TestServer): unknown[] => [
    server.app.db.prepare(`SELECT * FROM tasks WHERE id IN (${foreignTasks.map(() => '?').join(', ')}) ORDER BY id`).all(...foreignTasks),
    server.app.db.prepare("SELECT * FROM backup_records WHERE (type IN ('backup-log', 'restore-log') AND id = ?) OR (type = 'backup' AND id = ?) ORDER BY type").all(foreignLog, jobs[2]),
  ]
  const foreignRows = rowsOf(first)

  const second = await restart(t, first, { config: { tasks: { keep: 2 } } })
  t.same(rowsOf(second), foreignRows, 'the other installation\'s rows are untouched, its finished tasks past `keep` included')
  t.equal((await second.json<Obj>(`/rest/v0/tasks/${ownTask}`)).body['status'], 'interrupted')
  t.equal((await second.json<Obj>(`/rest/v0/tasks/${legacyTask}`)).body['status'], 'interrupted', 'a row from before installations is this one\'s')
  t.equal((await second.json<Obj>(`/rest/v0/tasks/${foreignTasks[0]}`)).body['status'], 'pending')
  const abort = await second.json<Obj>(`/rest/v0/tasks/${foreignTasks[0]}/actions/abort?sync=true`, { method: 'POST' })
  t.equal(abort.status, 409, 'another installation\'s task cannot be aborted from here')
  t.match(abort.body, { code: 'INCORRECT_STATE', data: { actual: 'another installation', expected: 'this installation', object: foreignTasks[0], property: 'installation' } })
  t.same(rowsOf(second), foreignRows, 'and stays as it was')
  for (const collection of ['backup-logs', 'restore-logs']) {
    t.equal((await second.json<Obj>(`/rest/v0/${collection}/${ownLog}`)).body['status'], 'interrupted', `${collection}: ours`)
    t.equal((await second.json<Obj>(`/rest/v0/${collection}/${legacyLog}`)).body['status'], 'interrupted', `${collection}: ours from before`)
    t.equal((await second.json<Obj>(`/rest/v0/${collection}/${foreignLog}`)).body['status'], 'pending', `${collection}: theirs`)
  }
  t.equal((await second.json<Obj>(`/rest/v0/backup-jobs/${jobs[0]}`)).body['runId'], undefined, 'our job is idle again')
  t.equal((await second.json<Obj>(`/rest/v0/backup-jobs/${jobs[1]}`)).body['runId'], undefined, 'and the one from before')
  t.equal((await second.json<Obj>(`/rest/v0/backup-jobs/${jobs[2]}`)).body['runId'], foreignLog, 'theirs still runs')
  const refused = await second.json<Obj>(`/rest/v0/backup-jobs/${jobs[2]}/actions/run?sync=true`, { method: 'POST' })
  t.equal(refused.status, 409, 'and cannot be run again from here')
  t.match(refused.body, { code: 'INCORRECT_STATE', data: { actual: 'running', expected: 'idle' } })
  t.same(rowsOf(second), foreignRows, 'nor changed')
})

t.test('issue 26: the installation id is made once; a damaged one stops the start', async (t) => {
  const first = await startServer()
  const file = join(first.dataDir, 'installation-id')
  t.equal(readFileSync(file, 'utf8'), `${first.app.installationId}\n`)
  t.match(first.app.installationId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  await first.close({ keepData: true })
  t.teardown(async () => {
    await first.close({ keepData: true })
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  writeFileSync(file, 'not an id\n')
  await t.rejects(startServer({ dataDir: first.dataDir }), { message: /installation-id does not hold an installation id/ })
  t.equal(readFileSync(file, 'utf8'), 'not an id\n', 'the file is left for the operator')
})
