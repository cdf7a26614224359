import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { packageRoot } from '../../src/paths.js'
import { keel } from '../helpers/cli.js'
import type { TestScope } from '../helpers/lab.js'

/** Starts `keel lab xapi`, resolves with its URL and what it wrote to stderr once it says it listens. */
function serve(t: TestScope, args: string[], env: Record<string, string>): Promise<{ url: string; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-xapi-cli-'))
  const child = spawn(process.execPath, [join(packageRoot, 'dist/src/cli/main.js'), 'lab', 'xapi', '--port', '0', '--data-dir', dataDir, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env } })
  t.teardown(async () => {
    const exited = new Promise((resolve) => child.once('close', resolve))
    child.kill('SIGTERM')
    await exited
    rmSync(dataDir, { recursive: true, force: true })
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /^keel lab xapi listening on (https?:\/\/\S+)\n/.exec(stdout)
      if (match?.[1] !== undefined) resolve({ url: match[1], stderr })
    })
    child.once('close', (status) => reject(new Error(`exited with ${status}: ${stderr}`)))
  })
}

const login = async (url: string, password: string): Promise<unknown> => {
  const response = await fetch(`${url}/jsonrpc`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'session.login_with_password', params: ['root', password], id: 1 }) })
  return ((await response.json()) as { result?: unknown; error?: unknown }).result ?? 'failed'
}

t.test('keel lab xapi takes its password from KEEL_XAPI_PASSWORD, or generates one and prints it once', async (t) => {
  const given = await serve(t, [], { KEEL_XAPI_PASSWORD: 'from-the-environment' })
  t.match(await login(given.url, 'from-the-environment'), /^OpaqueRef:/)
  t.equal(given.stderr, '', 'a given password is not printed')

  const generated = await serve(t, [], {})
  const password = /generated password for root: (\S+)\n/.exec(generated.stderr)?.[1]
  if (password === undefined) throw new Error(`no password in ${generated.stderr}`)
  t.match(await login(generated.url, password), /^OpaqueRef:/)
  t.equal(await login(generated.url, 'guess'), 'failed')

  const flag = await serve(t, ['--password', 'from-the-flag'], { KEEL_XAPI_PASSWORD: 'ignored' })
  t.match(await login(flag.url, 'from-the-flag'), /^OpaqueRef:/, '--password wins')
})

t.test('keel lab xapi refuses bad flags with status 2', async (t) => {
  for (const [args, message] of [
    [['--port', '70000'], /--port expects 0 to 65535/],
    [['--step-delay', 'soon'], /--step-delay expects a whole number/],
    [['--bogus'], /Unknown option '--bogus'/],
    [['--replay', 'pool.ndjson', '--password', 'pw'], /--replay takes no --password/],
  ] as const) {
    const run = await keel(['lab', 'xapi', ...args])
    t.equal(run.status, 2, args.join(' '))
    t.match(run.stderr, message)
  }
})

t.test('keel lab xapi --replay serves a recording, any password accepted; a file that is not one exits 1 naming it (issue 28)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-xapi-replay-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'pool.ndjson')
  writeFileSync(file, JSON.stringify({ t: '2026-11-26T23:00:00.000Z', kind: 'call', method: 'pool.get_all_records', params: ['<session>'], result: {}, ms: 3 }) + '\n')
  const replay = await serve(t, ['--replay', file], {})
  t.match(await login(replay.url, 'any password at all'), /^OpaqueRef:/)
  t.match(replay.stderr, `replaying ${file}`)

  const missing = await keel(['lab', 'xapi', '--port', '0', '--replay', join(dir, 'missing.ndjson')])
  t.equal(missing.status, 1)
  t.match(missing.stderr, /^keel: ENOENT: no such file or directory.*missing\.ndjson/)
  const bad = join(dir, 'bad.ndjson')
  writeFileSync(bad, 'not json\n')
  const refused = await keel(['lab', 'xapi', '--port', '0', '--replay', bad])
  t.equal(refused.status, 1)
  t.equal(refused.stderr, `keel: ${bad}:1: not a line of a XAPI recording\n`)
})
