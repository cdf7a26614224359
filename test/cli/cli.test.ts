import t from 'tap'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { packageRoot } from '../../src/paths.js'

// Each test starts its own keel processes in its own folder, so they run side by side: the file
// takes as long as its slowest test, not their sum.
t.jobs = 5

const cli = join(packageRoot, 'dist/src/cli/main.js')

interface Run {
  child: ChildProcessWithoutNullStreams
  stdout: () => string
  stderr: () => string
  exited: Promise<number | null>
}

function run(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, stdout: () => out, stderr: () => err, exited }
}

/** What the child printed once it matches, checked at each output; starting a child on a busy machine takes what it takes. */
async function waitFor(predicate: () => RegExpMatchArray | null, run: Run): Promise<RegExpMatchArray> {
  for (;;) {
    const match = predicate()
    if (match !== null) return match
    if (run.child.exitCode !== null) throw new Error(`exited early: ${run.stderr()}`)
    const next = new AbortController()
    await Promise.race([once(run.child.stdout, 'data', { signal: next.signal }), once(run.child.stderr, 'data', { signal: next.signal }), run.exited]).catch(() => undefined)
    next.abort()
  }
}

t.test('keel serve prints its URL, serves, and stops cleanly on SIGTERM', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-cli-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const server = run(['serve', '--port', '0', '--data-dir', dataDir], { KEEL_ADMIN_PASSWORD: 'cli-secret' })
  const [, url] = await waitFor(() => server.stdout().match(/listening on (http:\/\/127\.0\.0\.1:\d+)/), server)
  const auth = 'Basic ' + Buffer.from('admin@admin.net:cli-secret').toString('base64')
  const response = await fetch(`${url}/rest/v0/users`, { headers: { authorization: auth } })
  t.equal(response.status, 200)
  t.equal(((await response.json()) as unknown[]).length, 1)
  t.notMatch(server.stderr() + server.stdout(), /cli-secret/, 'the given password is never printed')

  const token = run(['token', 'create', '--url', url as string, '--user', 'admin@admin.net'], { KEEL_PASSWORD: 'cli-secret' })
  t.equal(await token.exited, 0, token.stderr())
  const secret = token.stdout().trim()
  t.match(secret, /^[A-Za-z0-9_-]{43}$/)
  t.equal((await fetch(`${url}/rest/v0/users`, { headers: { cookie: `authenticationToken=${secret}` } })).status, 200)

  const refused = run(['token', 'create', '--url', url as string, '--user', 'admin@admin.net'], { KEEL_PASSWORD: 'wrong' })
  t.equal(await refused.exited, 1)
  t.match(refused.stderr(), /token creation failed \(401\): invalid credentials/)

  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
})

t.test('a clean stop loses no request log line, however few were buffered', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-cli-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const server = run(['serve', '--port', '0', '--data-dir', dataDir], { KEEL_ADMIN_PASSWORD: 'cli-secret' })
  const [, url] = await waitFor(() => server.stdout().match(/listening on (http:\/\/127\.0\.0\.1:\d+)/), server)
  const ids = Array.from({ length: 7 }, (_, i) => `log-line-${i}`)
  for (const id of ids) await fetch(`${url}/rest/v0/pools`, { headers: { 'x-request-id': id } })
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
  const lines = server
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { reqId?: string; msg?: string })
  for (const id of ids) t.ok(lines.some((line) => line.reqId === id && line.msg === 'request'), `the line of ${id}`)
  t.equal(lines.at(-1)?.msg, 'stopped', 'down to the last line')
})

t.test('first start without a password prints a random one once, to stderr', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-cli-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const server = run(['serve', '--port', '0', '--data-dir', dataDir])
  const [, password] = await waitFor(() => server.stderr().match(/with password (\S+)/), server)
  const [, url] = await waitFor(() => server.stdout().match(/listening on (http:\/\/[\d.:]+)/), server)
  t.notMatch(server.stdout(), /password/)
  const auth = 'Basic ' + Buffer.from(`admin@admin.net:${password}`).toString('base64')
  t.equal((await fetch(`${url}/rest/v0/users`, { headers: { authorization: auth } })).status, 200)
  server.child.kill('SIGINT')
  t.equal(await server.exited, 0)

  const again = run(['serve', '--port', '0', '--data-dir', dataDir])
  await waitFor(() => again.stdout().match(/listening on/), again)
  t.notMatch(again.stderr(), /password/, 'shown once only')
  again.child.kill('SIGTERM')
  t.equal(await again.exited, 0)
})

t.test('a bad configuration stops the start naming the key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = join(dir, 'keel.toml')
  writeFileSync(config, '[authentication]\nmaxTokenValidity = "a while"\n')
  const bad = run(['serve', '--config', config, '--data-dir', join(dir, 'data')])
  t.equal(await bad.exited, 2)
  t.match(bad.stderr(), /authentication\.maxTokenValidity/)
  const badPort = run(['serve', '--port', 'eighty', '--data-dir', join(dir, 'data')])
  t.equal(await badPort.exited, 2)
  t.match(badPort.stderr(), /--port/)
  const unknown = run(['frobnicate'])
  t.equal(await unknown.exited, 2)
  t.match(unknown.stderr(), /unknown command/)
})

t.test('keel lab generate builds a lab of any size that serve then lists', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-cli-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const generate = run(['lab', 'generate', '--vms', '10000', '--hosts', '40', '--data-dir', dataDir], { KEEL_ADMIN_PASSWORD: 'gen-secret' })
  t.equal(await generate.exited, 0, generate.stderr())
  t.match(generate.stdout(), /generated a lab of 10000 VMs on 40 hosts/)
  const server = run(['serve', '--port', '0', '--data-dir', dataDir])
  const [, url] = await waitFor(() => server.stdout().match(/listening on (http:\/\/[\d.:]+)/), server)
  const auth = 'Basic ' + Buffer.from('admin@admin.net:gen-secret').toString('base64')
  const vms = (await (await fetch(`${url}/rest/v0/vms`, { headers: { authorization: auth } })).json()) as string[]
  t.equal(vms.length, 10000)
  const hosts = (await (await fetch(`${url}/rest/v0/hosts`, { headers: { authorization: auth } })).json()) as string[]
  t.equal(hosts.length, 40)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)

  const bad = run(['lab', 'generate', '--vms', 'many', '--data-dir', dataDir])
  t.equal(await bad.exited, 2)
  t.match(bad.stderr(), /--vms expects a whole number/)
  const missing = run(['lab', 'generate', '--data-dir', dataDir])
  t.equal(await missing.exited, 2)
  t.match(missing.stderr(), /needs --vms/)
})
