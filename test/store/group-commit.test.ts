import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ObjectChange } from '../../src/driver/types.js'
import { packageRoot } from '../../src/paths.js'
import { openDatabase } from '../../src/store/database.js'
import { GroupCommit, type WalSync } from '../../src/store/group-commit.js'
import { demoIds } from '../helpers/demo-lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

/** A WAL sync the test completes by hand once held; until then each completes at once. */
class HeldSync {
  calls = 0
  #held = false
  readonly #pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = []
  readonly #onCall: Array<() => void> = []

  readonly sync: WalSync = () => {
    this.calls++
    for (const notify of this.#onCall.splice(0)) notify()
    if (!this.#held) return Promise.resolve()
    return new Promise((resolve, reject) => this.#pending.push({ resolve, reject }))
  }

  hold(): void {
    this.#held = true
  }

  /** Completes the syncs held and every later one at once. */
  pass(): void {
    this.#held = false
    for (const { resolve } of this.#pending.splice(0)) resolve()
  }

  /** Resolves once the sync has been called `count` times in all. */
  async called(count: number): Promise<void> {
    while (this.calls < count) await new Promise<void>((resolve) => this.#onCall.push(resolve))
  }

  release(): void {
    this.#next().resolve()
  }

  fail(error: Error): void {
    this.#next().reject(error)
  }

  #next(): { resolve: () => void; reject: (error: Error) => void } {
    const next = this.#pending.shift()
    if (next === undefined) throw new Error('no sync is held')
    return next
  }
}

/** Resolves once the bus has published `count` updates of objects in `ids`: the commits are made. */
function updates(server: TestServer, ids: ReadonlySet<string>, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0
    const unsubscribe = server.app.bus.subscribe((change: ObjectChange) => {
      if (change.kind !== 'update' || !ids.has(change.object.id)) return
      if (++seen < count) return
      unsubscribe()
      resolve()
    })
  })
}

/** A request node:http refuses before any route: once answered, the server has run past every event before it. */
async function roundTrip(url: string): Promise<void> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  socket.end('NOT A REQUEST\r\n\r\n')
  socket.resume()
  await once(socket, 'close')
}

/** `committed`, or a failure naming the status if an answer comes first (a refused write would never commit). */
const seenBeforeAnswers = (committed: Promise<void>, answers: ReadonlyArray<Promise<Response>>): Promise<void> =>
  Promise.race([
    committed,
    ...answers.map(async (answer) => {
      throw new Error(`answered ${(await answer).status} before the commits were seen`)
    }),
  ])

const rename = (server: TestServer, id: string, name: string): Promise<Response> => server.request(`/rest/v0/vms/${id}`, jsonBody({ nameLabel: name }, 'PATCH'))

const nameOf = async (server: TestServer, id: string): Promise<unknown> => (await server.json<{ name_label: string }>(`/rest/v0/vms/${id}?fields=name_label`)).body.name_label

t.test('a PATCH is answered only once a sync covering it has completed', async (t) => {
  const held = new HeldSync()
  const server = await startServer({ app: { walSync: held.sync } })
  t.teardown(() => server.close())
  const { haltedVm } = await demoIds(server)
  held.hold()
  const before = held.calls

  const committed = updates(server, new Set([haltedVm]), 1)
  let answered = false
  const answer = rename(server, haltedVm, 'held-until-synced').then((response) => {
    answered = true
    return response
  })
  await seenBeforeAnswers(committed, [answer])
  await held.called(before + 1)
  await roundTrip(server.url)
  t.equal(answered, false, 'no answer while the sync is held, though the change is committed and published')

  held.release()
  t.equal((await answer).status, 204)
  t.equal(held.calls, before + 1)
  held.pass()
  t.equal(await nameOf(server, haltedVm), 'held-until-synced')
})

t.test('writes made while a sync runs share the next one', async (t) => {
  const held = new HeldSync()
  const server = await startServer({ app: { walSync: held.sync } })
  t.teardown(() => server.close())
  const vms = (await server.json<Array<{ id: string }>>('/rest/v0/vms?fields=id')).body.map((vm) => vm.id)
  const [first, ...others] = vms
  if (first === undefined || others.length < 9) throw new Error('the demo lab has too few VMs')
  const rest = others.slice(0, 9)
  held.hold()
  const before = held.calls

  const firstAnswer = rename(server, first, 'first')
  await held.called(before + 1)
  const committed = updates(server, new Set(rest), rest.length)
  const answers = rest.map((id, index) => rename(server, id, `batch-${index}`))
  await seenBeforeAnswers(committed, [firstAnswer, ...answers])
  await roundTrip(server.url)
  t.equal(held.calls, before + 1, 'the writes made during the sync start none of their own')

  held.release()
  t.equal((await firstAnswer).status, 204)
  await held.called(before + 2)
  held.release()
  t.same(
    (await Promise.all(answers)).map((response) => response.status),
    rest.map(() => 204),
  )
  t.equal(held.calls, before + 2, 'ten writes, two syncs')
  held.pass()
  t.same(await Promise.all(rest.map((id) => nameOf(server, id))), rest.map((_, index) => `batch-${index}`))
})

t.test('a failed sync is answered as an error, and nothing after it as a success', async (t) => {
  const held = new HeldSync()
  const reports: Error[] = []
  let reported: (error: Error) => void = () => undefined
  const firstReport = new Promise<Error>((resolve) => (reported = resolve))
  const onStoreSyncFailure = (error: Error): void => {
    reports.push(error)
    reported(error)
  }
  const server = await startServer({ app: { walSync: held.sync, onStoreSyncFailure } })
  t.teardown(() => server.close())
  const { haltedVm, runningVm } = await demoIds(server)
  held.hold()
  const before = held.calls

  const answer = server.json<{ code: string; data: { requestId: string } }>(`/rest/v0/vms/${haltedVm}`, jsonBody({ nameLabel: 'never-claimed' }, 'PATCH'))
  await held.called(before + 1)
  held.fail(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
  const { status, body, response } = await answer
  t.equal(status, 500)
  t.equal(body.code, 'INTERNAL_ERROR')
  t.equal(body.data.requestId, response.headers.get('x-request-id'))
  t.match(await firstReport, { code: 'EIO' }, 'the owner is told, to stop the process')

  const later = await server.json<{ code: string }>(`/rest/v0/vms/${runningVm}`, jsonBody({ nameLabel: 'also-never-claimed' }, 'PATCH'))
  t.equal(later.status, 500, 'a later write is refused too')
  t.equal(later.body.code, 'INTERNAL_ERROR')
  const listing = await server.json<{ code: string }>('/rest/v0/vms?fields=id')
  t.equal(listing.status, 500, 'so is a read while commits that no sync covers are there')
  t.equal(listing.body.code, 'INTERNAL_ERROR')
  // A single read's head is written before its body: it can only be cut.
  await t.rejects(server.request(`/rest/v0/vms/${haltedVm}`), { name: 'TypeError', cause: { code: 'UND_ERR_SOCKET' } })
  t.equal(held.calls, before + 1, 'no sync is tried after a failed one')
  t.equal(reports.length, 1, 'told once')
})

t.test('every acknowledged write is there after kill -9, and another process reads them while the service runs', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const child = spawn(process.execPath, [join(packageRoot, 'dist/src/cli/main.js'), 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env['PATH'] ?? '', KEEL_ADMIN_PASSWORD: ADMIN_PASSWORD },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = once(child, 'exit')
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  let url: string | undefined
  while (url === undefined) {
    await Promise.race([once(child.stdout, 'data'), exited])
    if (child.exitCode !== null) throw new Error(`keel serve exited early with ${child.exitCode}`)
    url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]
  }
  const auth = basic(ADMIN_EMAIL, ADMIN_PASSWORD)
  const vms = ((await (await fetch(`${url}/rest/v0/vms?fields=id`, { headers: { authorization: auth } })).json()) as Array<{ id: string }>).map((vm) => vm.id)
  const renamed = new Map(vms.map((id, index) => [id, `acknowledged-${index}`]))
  const statuses = await Promise.all(
    [...renamed].map(async ([id, name]) => (await fetch(`${url}/rest/v0/vms/${id}`, { ...jsonBody({ nameLabel: name }, 'PATCH'), headers: { authorization: auth, 'content-type': 'application/json' } })).status),
  )
  t.same(statuses, vms.map(() => 204))

  const reader = spawn(
    process.execPath,
    ['--input-type=module', '-e', `
      import Database from 'better-sqlite3'
      const db = new Database(process.argv[1], { readonly: true })
      const rows = db.prepare("SELECT id, data FROM lab_objects WHERE type = 'VM'").all()
      const names = Object.fromEntries(rows.map((row) => [row.id, JSON.parse(row.data).name_label]))
      process.stdout.write(JSON.stringify(process.argv.slice(2).map((id) => names[id])))
    `, join(dataDir, 'keel.sqlite'), ...vms],
    { cwd: packageRoot, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let read = ''
  reader.stdout.on('data', (chunk: Buffer) => (read += chunk.toString()))
  t.equal((await once(reader, 'exit'))[0], 0)
  t.same(JSON.parse(read), [...renamed.values()], 'another process reads every acknowledged write while the service runs')

  child.kill('SIGKILL')
  await exited
  const server = await startServer({ dataDir })
  t.teardown(() => server.close())
  t.same(await Promise.all(vms.map((id) => nameOf(server, id))), [...renamed.values()], 'every acknowledged write survived the kill')
})

t.test('GroupCommit alone: nothing to wait for until a commit, and close syncs what is left', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-group-commit-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const fullDir = join(dataDir, 'full')
  const full = openDatabase(fullDir)
  t.equal(full.pragma('synchronous', { simple: true }), 2, 'a store opened without group commit syncs each commit (FULL)')
  full.close()
  const db = openDatabase(dataDir, { groupCommit: true })
  t.teardown(() => db.close())
  t.equal(db.pragma('synchronous', { simple: true }), 1, 'NORMAL')
  const held = new HeldSync()
  const commits = await GroupCommit.open(db, { sync: held.sync, onFailure: (error) => t.fail(error.message) })
  t.equal(held.calls, 1, 'open syncs what the WAL holds')
  t.equal(commits.wait(), undefined)
  db.exec('CREATE TABLE notes (text TEXT)')
  db.prepare('INSERT INTO notes VALUES (?)').run('one')
  held.hold()
  const first = commits.wait()
  t.ok(first instanceof Promise)
  t.equal(commits.wait(), first, 'a wait with no commit since shares the sync in flight')
  db.prepare('INSERT INTO notes VALUES (?)').run('two')
  const second = commits.wait()
  t.not(second, first)
  t.equal(commits.wait(), second, 'later commits share the next sync')
  t.equal(held.calls, 2, 'the next starts only once the one in flight ends')
  held.release()
  await first
  await held.called(3)
  db.prepare('INSERT INTO notes VALUES (?)').run('three')
  const closed = commits.close()
  held.release()
  await second
  await held.called(4)
  held.release()
  await closed
  t.equal(held.calls, 4, 'close waited for the sync in flight, then synced the last commit')
})
