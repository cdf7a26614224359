import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parseRecordedLine } from '../../src/driver/xapi/recording.js'
import { packageRoot } from '../../src/paths.js'
import { basic } from '../helpers/server.js'
import { openLines } from '../helpers/streams.js'
import { PASSWORD, startSimulator } from '../helpers/xapi-simulator.js'

const ADMIN_PASSWORD = 'serve-record-admin-password'

t.test('issue 28: keel serve with KEEL_XAPI_RECORD records a pool connected through the servers collection, every line out at SIGTERM', async (t) => {
  const simulator = await startSimulator(t, { tls: { names: ['127.0.0.1'] } })
  const dir = mkdtempSync(join(tmpdir(), 'keel-serve-record-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'keel.toml')
  writeFileSync(config, '[driver]\nkind = "xapi"\n')
  const recordings = join(dir, 'recordings')
  const child = spawn(process.execPath, [join(packageRoot, 'dist/src/cli/main.js'), 'serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', config], {
    env: { PATH: process.env['PATH'] ?? '', KEEL_ADMIN_PASSWORD: ADMIN_PASSWORD, KEEL_XAPI_RECORD: recordings },
  })
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve))
  t.teardown(async () => {
    child.kill('SIGTERM')
    await exited
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /keel listening on (http:\/\/\S+)\n/.exec(stdout)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    void exited.then((status) => reject(new Error(`keel serve exited with ${status}: ${stderr}`)))
  })
  const auth = basic('admin@admin.net', ADMIN_PASSWORD)
  const watch = await openLines(`${url}/rest/v0/servers?fields=status&ndjson=true&watch=true`, { authorization: auth })
  t.teardown(() => watch.close())
  const created = await fetch(`${url}/rest/v0/servers`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify({ host: simulator.url, username: 'root', password: PASSWORD, allowUnauthorized: true }),
  })
  t.equal(created.status, 201)
  for (let count = 1; !JSON.stringify(watch.values).includes('"connected"'); count++) await watch.until(count)
  watch.close()

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'a clean stop')
  const [name, ...others] = readdirSync(recordings)
  t.equal(others.length, 0, 'one file')
  const text = readFileSync(join(recordings, name ?? ''), 'utf8')
  t.notOk(text.includes(PASSWORD), 'no password')
  const lines = text.trimEnd().split('\n').map(parseRecordedLine)
  t.ok(lines.every((line) => line !== undefined), 'every line whole')
  t.match(lines[0], { method: 'session.login_with_password', params: ['root', '<password>'] })
  t.match(lines.at(-1), { method: 'session.logout', params: ['<session>'] }, 'the logout at the stop is written')
})
