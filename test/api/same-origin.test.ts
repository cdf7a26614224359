import { request } from 'node:http'
import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer, type TestServer } from '../helpers/server.js'

interface ErrorBody {
  code: string
  data: Record<string, unknown>
}

const powerOf = async (server: TestServer, vm: string): Promise<unknown> => (await server.json<{ power_state: string }>(`/rest/v0/vms/${vm}`)).body.power_state
/** fetch sets Host itself; a proxy's forwarded Host needs node:http. */
function postWithHost(server: TestServer, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { method: 'POST', headers }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

const taskCount = async (server: TestServer): Promise<number> => (await server.json<string[]>('/rest/v0/tasks')).body.length

t.test('cross-site request forgery through the authenticationToken cookie', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const adminId = (await server.json<Array<{ id: string }>>('/rest/v0/users?fields=id')).body[0]?.id
  const token = (await server.json<{ token: { id: string } }>(`/rest/v0/users/${adminId}/authentication_tokens`, jsonBody({ expiresIn: '1 hour' }))).body.token.id
  const cookie = `authenticationToken=${token}`
  const start = `/rest/v0/vms/${demo.haltedVm}/actions/start?sync=true`
  const stop = `/rest/v0/vms/${demo.haltedVm}/actions/hard_shutdown?sync=true`
  /** A form another site's page posts: no body a script chose, the browser's headers. */
  const formPost = (headers: Record<string, string>) =>
    server.json<ErrorBody>(start, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers } })

  t.test('a form posted from another site with the cookie: 403, the VM not started, no task', async (t) => {
    const tasks = await taskCount(server)
    const cases: Array<Record<string, string>> = [
      { origin: 'http://evil.example' },
      { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: server.url.replace('127.0.0.1', 'localhost') },
      { origin: server.url.replace('http:', 'ftp:') },
    ]
    for (const headers of cases) {
      const { status, body } = await formPost(headers)
      t.equal(status, 403, JSON.stringify(headers))
      t.equal(body.code, 'CROSS_SITE_REQUEST')
    }
    const { body } = await formPost({ origin: 'http://evil.example' })
    t.same(body.data, { origin: 'http://evil.example' })
    t.same((await formPost({ 'sec-fetch-site': 'same-site' })).body.data, { secFetchSite: 'same-site' })
    t.equal(await powerOf(server, demo.haltedVm), 'Halted')
    t.equal(await taskCount(server), tasks)
  })

  t.test('reads with the cookie are not checked', async (t) => {
    const response = await server.request(`/rest/v0/vms/${demo.haltedVm}`, { headers: { cookie, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' } })
    t.equal(response.status, 200)
  })

  t.test('from the service\'s own pages: Origin matching the Host, or Sec-Fetch-Site same-origin', async (t) => {
    const cases: Array<Record<string, string>> = [{ origin: server.url }, { 'sec-fetch-site': 'same-origin' }, { origin: server.url, 'sec-fetch-site': 'same-origin' }]
    for (const headers of cases) {
      const started = await server.request(start, { method: 'POST', headers: { cookie, ...headers } })
      t.equal(started.status, 204, JSON.stringify(headers))
      t.equal(await powerOf(server, demo.haltedVm), 'Running')
      t.equal((await server.request(stop, { method: 'POST', headers: { cookie, ...headers } })).status, 204)
    }
  })

  t.test('a proxy ending TLS: an https Origin for the Host the client reached', async (t) => {
    const host = 'keel.example:8443'
    t.equal(await postWithHost(server, start, { cookie, host, origin: `https://${host}` }), 204)
    t.equal(await powerOf(server, demo.haltedVm), 'Running')
    t.equal(await postWithHost(server, stop, { cookie, host, origin: 'https://KEEL.example:8443' }), 204)
    t.equal(await postWithHost(server, start, { cookie, host, origin: 'https://keel.example' }), 403, 'another port is another origin')
    t.equal(await postWithHost(server, start, { cookie, host: 'keel.example:443', origin: 'https://keel.example' }), 204, 'the default port written out or not')
    t.equal(await postWithHost(server, stop, { cookie }), 204)
    t.equal(await powerOf(server, demo.haltedVm), 'Halted')
  })

  t.test('no browser headers at all: a script, not a page (the reference\'s documented curl use)', async (t) => {
    t.equal((await server.request(start, { method: 'POST', headers: { cookie } })).status, 204)
    t.equal((await server.request(stop, { method: 'POST', headers: { cookie } })).status, 204)
  })

  t.test('Bearer and Basic are never checked', async (t) => {
    const crossSite = { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' }
    t.equal((await server.request(start, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...crossSite } })).status, 204)
    t.equal((await server.request(stop, { method: 'POST', headers: crossSite })).status, 204)
    t.equal(await powerOf(server, demo.haltedVm), 'Halted')
  })
})
