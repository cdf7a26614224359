import { gunzipSync } from 'node:zlib'
import { Readable } from 'node:stream'
import t from 'tap'
import tar from 'tar-stream'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedUser } from '../helpers/scoped-user.js'
import { startServer } from '../helpers/server.js'

type Obj = Record<string, unknown>

/** name → content of each file of a tar archive. */
async function untar(bytes: Buffer): Promise<Map<string, string>> {
  const files = new Map<string, string>()
  const extract = tar.extract()
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = []
      stream.on('data', (chunk) => chunks.push(chunk as Buffer))
      stream.on('end', () => {
        files.set(header.name, Buffer.concat(chunks).toString())
        next()
      })
    })
    extract.on('finish', resolve)
    extract.on('error', reject)
  })
  Readable.from([bytes]).pipe(extract)
  await done
  return files
}

t.test('what hosts tell beyond their records', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)

  t.test('missing updates of a host and of a pool, from the lab\'s catalogue', async (t) => {
    const { status, body } = await server.json<Array<Obj>>(`/rest/v0/hosts/${demo.master}/missing_patches`)
    t.equal(status, 200)
    t.same(body.map((patch) => patch['name']), ['xapi-core', 'xen-hypervisor', 'openssh'])
    for (const patch of body) t.match(patch, { version: String, release: String, description: String, url: String, license: String, size: Number, changelog: { date: Number, description: String, author: String } })
    const pool = await server.json<Array<Obj>>(`/rest/v0/pools/${demo.pool}/missing_patches`)
    t.same(pool.body, body, 'the same three, once each')
  })

  t.test('SMT', async (t) => {
    t.same((await server.json(`/rest/v0/hosts/${demo.master}/smt`)).body, { enabled: true })
  })

  t.test('the audit log, plain or gzip-encoded', async (t) => {
    const plain = await server.request(`/rest/v0/hosts/${demo.master}/audit.txt`, { headers: { 'accept-encoding': 'identity' } })
    t.equal(plain.status, 200)
    t.equal(plain.headers.get('content-type'), 'application/octet-stream')
    t.match(plain.headers.get('content-disposition'), /^attachment; filename="xcp-ng-01-2026-11-22T12:00:00\.000Z-audit\.txt"$/)
    const text = await plain.text()
    t.match(text, /'LOCAL_SUPERUSER' 'root' 'ALLOWED' 'OK' 'API'/)
    t.match(text, /Toolstack started/)
    const zipped = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      // fetch decodes gzip itself: node:http shows the bytes as sent.
      import('node:http').then(({ get }) => {
        get(`${server.url}/rest/v0/hosts/${demo.master}/audit.txt`, { headers: { 'accept-encoding': 'gzip', authorization: 'Basic ' + Buffer.from('admin@admin.net:test-admin-password').toString('base64') } }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }))
        }).on('error', reject)
      }, reject)
    })
    t.equal(zipped.encoding, 'gzip')
    t.equal(gunzipSync(zipped.body).toString(), text)
  })

  t.test('the log archive: a real gzipped tar of the host\'s log files', async (t) => {
    const response = await server.request(`/rest/v0/hosts/${demo.master}/logs.tgz`)
    t.equal(response.status, 200)
    t.equal(response.headers.get('content-type'), 'application/gzip')
    const files = await untar(gunzipSync(Buffer.from(await response.arrayBuffer())))
    t.same([...files.keys()], ['xensource.log', 'kern.log'])
    t.match(files.get('xensource.log'), /xapi: .*Toolstack started/)
    t.match(files.get('kern.log'), /kernel: Linux version/)
  })

  t.test('refusals', async (t) => {
    for (const path of ['missing_patches', 'smt', 'audit.txt', 'logs.tgz']) {
      const missing = await server.json<{ code: string }>(`/rest/v0/hosts/nope/${path}`)
      t.equal(missing.status, 404, path)
      t.equal((await server.json(`/rest/v0/hosts/${demo.runningVm}/${path}`)).status, 404, `${path} of a VM`)
    }
    t.equal((await server.json(`/rest/v0/pools/${demo.master}/missing_patches`)).status, 404)
    const reader = await scopedUser(server, 'host-reader@example.net', [{ resource: 'host', action: 'read' }])
    t.equal((await server.json(`/rest/v0/hosts/${demo.master}/smt`, { auth: reader.auth })).status, 200)
    for (const path of ['audit.txt', 'logs.tgz']) {
      const refused = await server.json<{ code: string; data: { missingPrivileges: Obj[] } }>(`/rest/v0/hosts/${demo.master}/${path}`, { auth: reader.auth })
      t.equal(refused.status, 403, `${path} needs export:logs`)
      t.match(refused.body.data.missingPrivileges, [{ resource: 'host', action: 'export:logs' }])
    }
    t.equal((await server.json(`/rest/v0/pools/${demo.pool}/missing_patches`, { auth: reader.auth })).status, 403)
  })

  t.test('a host that is down tells nothing: 409, its pool\'s statistics carry its error', async (t) => {
    const [guest] = (await server.json<Array<{ id: string }>>('/rest/v0/vms?fields=id&filter=name_label:db-02')).body
    t.equal((await server.request(`/rest/v0/vms/${guest?.id}/actions/clean_shutdown?sync=true`, { method: 'POST' })).status, 204)
    t.equal((await server.request(`/rest/v0/hosts/${demo.host2}/actions/clean_shutdown?sync=true`, { method: 'POST' })).status, 204)
    for (const path of ['missing_patches', 'audit.txt', 'logs.tgz', 'stats']) {
      const refused = await server.json<{ code: string; data: Obj }>(`/rest/v0/hosts/${demo.host2}/${path}`)
      t.equal(refused.status, 409, path)
      t.same(refused.body.data, { actual: 'Halted', expected: 'Running' })
    }
    const pool = (await server.json<Record<string, Obj>>(`/rest/v0/pools/${demo.pool}/stats`)).body
    t.same(pool[demo.host2], { error: { code: 'INCORRECT_STATE', message: `host ${demo.host2} is not running` } })
    t.ok('stats' in (pool[demo.master] ?? {}), 'the others answer')
    const dashboard = (await server.json<{ missingPatches: Obj }>('/rest/v0/dashboard')).body
    t.match(dashboard.missingPatches, { nHosts: 3, nHostsFailed: 1, nHostsWithMissingPatches: 2 })
  })
})

t.test('service routes, public as the reference has them', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  t.same((await server.json('/rest/v0/ping', { auth: null })).body, { result: 'pong', timestamp: server.clock.now })
  t.same((await server.json('/rest/v0/gui-routes', { auth: null })).body, { xo5: '/', xo6: '/v6' })
  t.same((await server.json('/rest/v0/mcp/status', { auth: null })).body, { enabled: true })
  t.equal((await server.json('/rest/v0/ping', { auth: null, method: 'POST' })).status, 405)
})
