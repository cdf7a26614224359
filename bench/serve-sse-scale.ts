// Child process for the SSE scale benchmark: Keel on a generated lab whose VMs carry one of
// ROLES team tags (`team-<n>-`: a selector matches a substring, and `team-1` would match `team-10`), with USERS users each holding one of ROLES roles (read VMs of one tag) and a
// token each. Prints its URL, then `setup {"tokens": [...], "admin": "<cookie>"}`; driven over
// stdin: `rss` (after a full GC), `cpu`, `run RATE SECONDS lab|bus` (renames VMs at RATE a second,
// each name carrying the time of the change).
import { createInterface } from 'node:readline'
import { pino } from 'pino'
import { createApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { generateLabSpec } from '../src/driver/lab/generate.js'

const [dataDir, vmArg, userArg, roleArg, boundArg] = process.argv.slice(2)
if (dataDir === undefined) throw new Error('usage: serve-sse-scale DATA_DIR VMS USERS ROLES BOUND_MIB')
const [vms, users, roles] = [Number(vmArg), Number(userArg), Number(roleArg)]
const app = await createApp({
  dataDir,
  config: loadConfig(undefined, { restApi: { maxRamAllocatedForSseClients: Number(boundArg) } }),
  logger: pino({ level: 'silent' }),
  adminPassword: 'bench-password',
  labSpec: generateLabSpec({ vms, hosts: Math.max(3, Math.round(vms / 200)) }),
})
const url = await app.listen(0, '127.0.0.1')
const adminAuth = { authorization: 'Basic ' + Buffer.from('admin@admin.net:bench-password').toString('base64') }
const post = async (path: string, body: unknown, method = 'POST'): Promise<{ id?: string }> => {
  const response = await fetch(url + path, { method, headers: { ...adminAuth, 'content-type': 'application/json' }, body: body === undefined ? null : JSON.stringify(body) })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
  const text = await response.text()
  return text === '' ? {} : (JSON.parse(text) as { id?: string })
}

const targets = [...app.driver.objectsOfType('VM')].map((vm) => vm.id)
for (const [index, id] of targets.entries()) {
  const vm = app.driver.getObject(id)
  if (vm !== undefined) await app.driver.setTag(vm, `team-${index % roles}-`, true)
}
const roleIds: string[] = []
for (let role = 0; role < roles; role++) {
  const { id } = await post('/rest/v0/acl-roles', { name: `team ${role}` })
  await post('/rest/v0/acl-privileges', { roleId: id, resource: 'vm', action: 'read', effect: 'allow', selector: `tags:team-${role}-` })
  roleIds.push(id as string)
}
const tokens: string[] = []
// Passwords are hashed on the thread pool: a few at a time keep it busy.
for (let first = 0; first < users; first += 16) {
  const ids = await Promise.all(
    Array.from({ length: Math.min(16, users - first) }, (_, i) => app.directory.createUser({ email: `user-${first + i}@bench.net`, password: `password-${first + i}` })),
  )
  for (const [i, userId] of ids.entries()) {
    await post(`/rest/v0/acl-roles/${roleIds[(first + i) % roles]}/users/${userId}`, undefined, 'PUT')
    tokens.push(app.tokens.create({ userId, validity: 24 * 3600_000 }).id)
  }
}
const admin = (await (await fetch(`${url}/rest/v0/users/me/authentication_tokens`, { method: 'POST', headers: adminAuth })).json()) as { token: { id: string } }
const gc = (globalThis as { gc?: () => void }).gc

/**
 * One rename of a VM, its name the time of the change: through the lab (a SQLite transaction
 * each, then the event bus) or, with `bus`, published on the event bus as the driver publishes a
 * commit, so that the fan-out is measured apart from the lab's writes.
 */
const current = new Map(targets.map((id) => [id, app.driver.getObject(id)]))
async function rename(id: string, source: 'lab' | 'bus'): Promise<void> {
  const vm = current.get(id)
  if (vm === undefined) return
  const nameLabel = `t${(performance.timeOrigin + performance.now()).toFixed(3)}`
  if (source === 'lab') {
    await app.driver.update(vm, { nameLabel })
    return
  }
  const next = Object.freeze({ ...vm, name_label: nameLabel })
  current.set(id, next)
  app.bus.publish({ kind: 'update', object: next, previous: vm })
}

/** Renames VMs in turn at `rate` a second for `seconds`, on a schedule kept against the clock. */
async function run(rate: number, seconds: number, source: 'lab' | 'bus'): Promise<void> {
  const started = performance.now()
  const total = rate * seconds
  let applied = 0
  while (applied < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate))
    for (; applied < due; applied++) {
      await rename(targets[applied % targets.length] as string, source)
      // Lets the event loop deliver between changes, as a lab with real work in flight would.
      if (applied % 10 === 9) await new Promise((resolve) => setImmediate(resolve))
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  process.stdout.write(`applied ${((performance.now() - started) / 1000).toFixed(3)} ${applied}\n`)
}

process.stdout.write(url + '\n')
process.stdout.write(`setup ${JSON.stringify({ tokens, admin: `authenticationToken=${admin.token.id}` })}\n`)
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, first, second, third] = line.split(' ')
  if (command === 'rss') {
    gc?.()
    gc?.()
    process.stdout.write(`rss ${process.memoryUsage().rss}\n`)
  } else if (command === 'cpu') {
    const usage = process.cpuUsage()
    process.stdout.write(`cpu ${usage.user + usage.system}\n`)
  } else if (command === 'run') {
    void run(Number(first), Number(second), third === 'lab' ? 'lab' : 'bus')
  }
})
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
