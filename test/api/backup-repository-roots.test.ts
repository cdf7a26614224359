import t from 'tap'
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { rootLayout } from '../helpers/repository-roots.js'
import { demoIds } from '../helpers/demo-lab.js'
import { basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

// Issue 26: a role copied from "Storage administrator" could make Keel write anywhere through a repository's url.

type Obj = Record<string, unknown>

/** A user holding a copy of the "Storage administrator" template (which grants `backup-repository:*`). */
async function storageAdministrator(server: TestServer): Promise<string> {
  const user = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email: 'storage@example.net', password: 'a-storage-password' }))
  const templates = await server.json<Array<{ id: string; name: string }>>('/rest/v0/acl-roles?fields=id,name&filter=isTemplate?')
  const template = templates.body.find((role) => role.name === 'Storage administrator')
  if (user.status !== 201 || template === undefined) throw new Error('no user or no template')
  const copy = await server.json<{ id: string }>(`/rest/v0/acl-roles/${template.id}/actions/copy?sync=true`, jsonBody({ name: 'storage' }))
  const assigned = await server.request(`/rest/v0/acl-roles/${copy.body.id}/users/${user.body.id}`, { method: 'PUT' })
  if (copy.status !== 201 || assigned.status !== 204) throw new Error(`copy ${copy.status}, assign ${assigned.status}`)
  return basic('storage@example.net', 'a-storage-password')
}

const listing = async (server: TestServer): Promise<unknown> => (await server.json('/rest/v0/backup-repositories?fields=id,name,url,error')).body

t.test('repository urls outside the roots are refused for administrators and storage administrators alike', async (t) => {
  const { root, outside } = rootLayout(t)
  const server = await startServer({ config: { backups: { repositoryRoots: [root] } } })
  t.teardown(() => server.close())
  const callers: Array<[string, string | undefined]> = [
    ['an administrator', undefined],
    ['a storage administrator', await storageAdministrator(server)],
  ]
  const outsideUrls = [`file://${root}/../outside`, `file://${root}/%2e%2e/outside`, `file://${root}/real/.%2E/%2E%2e/outside/sub`, `file://${outside}`, `file://${root}/escape`, `file://${root}/escape/deeper`]
  const refusal = (url: string): Obj => ({ error: `the backup repository ${url} is not inside the folders backup repositories may use`, code: 'REPOSITORY_OUTSIDE_ROOTS', data: { url, rootCount: 1 } })

  for (const [who, auth] of callers) {
    t.test(`${who}: POST`, async (t) => {
      const before = await listing(server)
      for (const url of outsideUrls) {
        const refused = await server.json(`/rest/v0/backup-repositories`, { ...jsonBody({ name: 'x', url }), auth })
        t.equal(refused.status, 403, url)
        t.same(refused.body, refusal(url), url)
      }
      t.same(await listing(server), before, 'no repository was created')
      t.same(readdirSync(outside), [], 'nothing was written outside the root')
    })
  }

  t.test('inside the root, directly or through a link that stays in it, is accepted; PATCH of url is held to the same', async (t) => {
    for (const [i, [who, auth]] of callers.entries()) {
      const url = `file://${root}/${i === 0 ? 'real' : 'alias'}`
      const created = await server.json<{ id: string }>('/rest/v0/backup-repositories', { ...jsonBody({ name: `inside ${i}`, url }), auth })
      t.equal(created.status, 201, `${who}: ${JSON.stringify(created.body)}`)
      const path = `/rest/v0/backup-repositories/${created.body.id}`
      t.match((await server.json(path)).body, { url, error: undefined })
      const before = await listing(server)
      for (const bad of outsideUrls) {
        const refused = await server.json(path, { ...jsonBody({ url: bad }, 'PATCH'), auth })
        t.equal(refused.status, 403, `${who}: PATCH ${bad}`)
        t.same(refused.body, refusal(bad))
      }
      t.same(await listing(server), before, 'the url is unchanged')
      t.equal((await server.request(path, { ...jsonBody({ url: `file://${root}` }, 'PATCH'), auth })).status, 204, `${who}: the root itself`)
      t.match((await server.json(path)).body, { url: `file://${root}`, error: undefined })
    }
    t.same(readdirSync(outside), [], 'nothing was written outside the root')
  })
})

t.test('a link swapped to point out of the root after creation: the run, the benchmark and the health check refuse, nothing is written outside', async (t) => {
  const { root, outside } = rootLayout(t)
  const server = await startServer({ config: { backups: { repositoryRoots: [root] } } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  mkdirSync(join(root, 'target'))
  symlinkSync(join(root, 'target'), join(root, 'swapped'))
  const url = `file://${root}/swapped`
  const repository = await server.json<{ id: string }>('/rest/v0/backup-repositories', jsonBody({ name: 'swapped', url }))
  t.equal(repository.status, 201)
  const job = await server.json<{ id: string }>('/rest/v0/backup-jobs', jsonBody({ name: 'swapped', mode: 'full', vms: { id: demo.localHaltedVm }, remotes: { id: repository.body.id } }))
  t.equal(job.status, 201)

  rmSync(join(root, 'swapped'))
  symlinkSync(outside, join(root, 'swapped'))
  const refusal = { code: 'REPOSITORY_OUTSIDE_ROOTS', data: { url, rootCount: 1 } }
  const run = await server.json(`/rest/v0/backup-jobs/${job.body.id}/actions/run?sync=true`, { method: 'POST' })
  t.equal(run.status, 403)
  t.match(run.body, refusal)
  const logs = await server.json<Array<{ jobId: string; status: string }>>('/rest/v0/backup-logs?fields=jobId,status')
  t.same(logs.body.filter((log) => log.jobId === job.body.id).map((log) => log.status), ['failure'], 'the run is logged as failed')
  const benchmark = await server.json(`/rest/v0/backup-repositories/${repository.body.id}/actions/benchmark?sync=true`, { method: 'POST' })
  t.equal(benchmark.status, 403)
  t.match(benchmark.body, refusal)
  const health = await server.json(`/rest/v0/backup-repositories/${repository.body.id}/health`)
  t.equal(health.status, 403)
  t.match(health.body, refusal)
  t.match((await server.json(`/rest/v0/backup-repositories/${repository.body.id}`)).body, { error: /not inside the folders/ }, 'the record says why it cannot be used')
  t.same(readdirSync(outside), [], 'nothing was written outside the root')
  t.same(readdirSync(join(root, 'target')), [], 'nor in the old target: the run stopped before writing')
})

t.test('a repository stored before the roots were narrowed is shown with an error, not written to, not cleaned, and the service starts', async (t) => {
  const { base, root } = rootLayout(t)
  const old = join(base, 'old')
  const vmFolder = join(old, 'xo-vm-backups', '0d6c1b9e-7a1f-4c3e-9b2d-5f4e3a2b1c0d')
  mkdirSync(vmFolder, { recursive: true })
  const first = await startServer({ config: { backups: { repositoryRoots: [base] } } })
  const demo = await demoIds(first)
  const repository = await first.json<{ id: string }>('/rest/v0/backup-repositories', jsonBody({ name: 'old', url: `file://${old}` }))
  t.equal(repository.status, 201)
  const job = await first.json<{ id: string }>('/rest/v0/backup-jobs', jsonBody({ name: 'old', mode: 'full', vms: { id: demo.localHaltedVm }, remotes: { id: repository.body.id } }))
  await first.close({ keepData: true })
  // What a run cut short would have left: a clean-up at start would remove it, were the folder still allowed.
  writeFileSync(join(vmFolder, '.0123456789ab.tmp'), 'left')

  const second = await startServer({ dataDir: first.dataDir, config: { backups: { repositoryRoots: [root] } } })
  t.teardown(async () => {
    await second.close()
    rmSync(first.dataDir, { recursive: true, force: true })
  })
  const record = await second.json<Obj>(`/rest/v0/backup-repositories/${repository.body.id}`)
  t.equal(record.status, 200)
  t.match(record.body, { url: `file://${old}`, error: `the backup repository file://${old} is not inside the folders backup repositories may use` })
  t.ok(existsSync(join(vmFolder, '.0123456789ab.tmp')), 'the start-up clean-up did not touch it')
  const run = await second.json<{ code: string }>(`/rest/v0/backup-jobs/${job.body.id}/actions/run?sync=true`, { method: 'POST' })
  t.equal(run.status, 422, 'a run refuses a repository with an error')
  t.same(readdirSync(vmFolder), ['.0123456789ab.tmp'], 'nothing was written there')
  t.same((await second.json(`/rest/v0/backup-archives?backup-repository=${repository.body.id}`)).body, [], 'its archives are not listed')
})

t.test('the default root is the data directory’s backups folder, made at start', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const root = join(server.dataDir, 'backups')
  t.ok(existsSync(root))
  t.equal((await server.json('/rest/v0/backup-repositories', jsonBody({ name: 'in', url: `file://${root}` }))).status, 201)
  const refused = await server.json('/rest/v0/backup-repositories', jsonBody({ name: 'data', url: `file://${server.dataDir}` }))
  t.equal(refused.status, 403)
  t.match(refused.body, { code: 'REPOSITORY_OUTSIDE_ROOTS', data: { rootCount: 1 } })
})
