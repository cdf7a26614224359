import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { keel } from '../helpers/cli.js'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer } from '../helpers/server.js'

t.test('keel backup run and restore against the server', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const folder = { path: join(server.dataDir, 'backups', 'cli') }
  mkdirSync(folder.path)
  const token = (await server.json<{ token: { id: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), redirect: 'follow' })).body.token.id
  const env = { KEEL_URL: server.url, KEEL_TOKEN: token }
  const repository = (await server.json<{ id: string }>('/rest/v0/backup-repositories', jsonBody({ name: 'cli', url: `file://${folder.path}` }))).body.id
  const vm = (await server.json<{ id: string }>(`/rest/v0/pools/${demo.pool}/actions/create_vm?sync=true`, jsonBody({ name_label: 'cli backup', template: demo.template, vdis: [{ name_label: 'disk', size: 8 * 1024 * 1024, sr: demo.defaultSr }] }))).body.id
  const job = (await server.json<{ id: string }>('/rest/v0/backup-jobs', jsonBody({ name: 'cli', mode: 'full', vms: { id: vm }, remotes: { id: repository } }))).body.id

  const run = await keel(['backup', 'run', job], env)
  t.equal(run.status, 0, run.stderr)
  t.equal(run.stderr, '', 'no progress bar when stderr is not a terminal')
  const archives = await server.json<Array<{ id: string }>>(`/rest/v0/backup-archives?backup-repository=${repository}&fields=id`)
  const archive = archives.body[0]
  if (archive === undefined) throw new Error('the run wrote no archive')

  const restored = await keel(['backup', 'restore', archive.id, '--sr', demo.defaultSr], env)
  t.equal(restored.status, 0, restored.stderr)
  const id = restored.stdout.trim()
  t.match((await server.json<{ name_label: string }>(`/rest/v0/vms/${id}`)).body.name_label, /^cli backup \(\d{8}T\d{6}Z\)$/, "it prints the new VM's id; the VM has the source's name and the archive's time")

  const unknown = await keel(['backup', 'run', 'no-such-job'], env)
  t.equal(unknown.status, 1)
  t.match(unknown.stderr, /backup job no-such-job failed: HTTP 404/)
  const failing = await keel(['backup', 'restore', `${repository}//xo-vm-backups/${vm}/20000101T000000Z.json`, '--sr', demo.defaultSr], env)
  t.equal(failing.status, 1)
  t.match(failing.stderr, /HTTP 404/)
  const usage = await keel(['backup', 'restore', archive.id], env)
  t.equal(usage.status, 2)
  t.match(usage.stderr, /needs one archive id and --sr/)
  const noToken = await keel(['backup', 'run', job], { KEEL_URL: server.url })
  t.equal(noToken.status, 2)
})
