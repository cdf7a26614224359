import { request } from 'node:http'
import t from 'tap'
import { WebSocket } from 'ws'
import { consoleUrl, isOpen, mustOpen, openConsole, typeAndSee, type RefusedConsole } from '../helpers/console-socket.js'
import { demoIds } from '../helpers/demo-lab.js'
import { scopedUser } from '../helpers/scoped-user.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer } from '../helpers/server.js'

// Over XAPI the pool's VNC server speaks RFB (the simulator's: the lab's console); Keel only relays it.
const xapi = process.env['KEEL_TEST_DRIVER'] === 'xapi'

/** The close code and reason of a console that opens (the upgrade is answered) and is then closed by the server. */
function closedAfterUpgrade(url: string, id: string, headers: Record<string, string>): Promise<{ code: number; reason: string }> {
  const ws = new WebSocket(consoleUrl(url, id), { headers })
  return new Promise((resolve, reject) => {
    ws.on('unexpected-response', (_request, response) => reject(new Error(`refused: ${response.statusCode ?? 0}`)))
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  })
}

t.test('console WebSockets at /api/consoles/<id>', async (t) => {
  // The expiry timer wakes every 50 ms, so that the test's clock moved past a token's expiry is seen at once.
  const server = await startServer({ config: { restApi: { streamCredentialCheckInterval: 50 } } })
  t.teardown(() => server.close())
  const ids = await demoIds(server)
  const admin = { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) }
  const powerState = async (id: string): Promise<string> => (await server.json<{ power_state: string }>(`/rest/v0/vms/${id}?fields=power_state`)).body.power_state

  const refused = async (id: string, headers: Record<string, string>): Promise<RefusedConsole> => {
    const opened = await openConsole(server.url, id, headers)
    if (isOpen(opened)) {
      opened.ws.close()
      throw new Error('the console opened')
    }
    return opened
  }

  t.test('refused before the upgrade, with the status and error body the REST API answers', async (t) => {
    const reader = await scopedUser(server, 'console-reader@example.com', [{ resource: 'vm', action: 'read' }])
    const noCredentials = await refused(ids.runningVm, {})
    t.equal(noCredentials.status, 401)
    t.equal(noCredentials.body.code, 'INVALID_CREDENTIALS')
    t.equal(noCredentials.headers['www-authenticate'], 'Basic realm="keel"')
    const wrongPassword = await refused(ids.runningVm, { authorization: basic(ADMIN_EMAIL, 'wrong') })
    t.equal(wrongPassword.status, 401)
    const unknown = await refused('00000000-0000-4000-8000-000000000000', admin)
    t.same([unknown.status, unknown.body.code], [404, 'NO_SUCH_OBJECT'])
    const pool = await refused(ids.pool, admin)
    t.same([pool.status, pool.body.code], [404, 'NO_SUCH_OBJECT'], 'a pool has no console')
    const halted = await refused(ids.haltedVm, admin)
    t.same([halted.status, halted.body.code], [409, 'INCORRECT_STATE'])
    const notAllowed = await refused(ids.runningVm, { authorization: reader.auth })
    t.equal(notAllowed.status, 403)
    t.same(notAllowed.body.data, { missingPrivileges: [{ resource: 'vm', action: 'console', objectId: ids.runningVm }] })
    t.equal(await powerState(ids.runningVm), 'Running', 'the VM is as it was')
    const malformed = new WebSocket(`${server.url.replace(/^http/, 'ws')}/api/consoles/%E0%A4%A`, { headers: admin })
    t.equal(await new Promise((resolve) => malformed.on('unexpected-response', (_request, response) => resolve(response.statusCode))), 404, 'an id that does not decode names no object')
    const metrics = await (await server.request('/metrics')).text()
    t.notMatch(metrics, /keel_open_streams\{kind="console"\} [1-9]/, 'no console was opened')
  })

  t.test('a cookie-authenticated upgrade from another site is refused (cross-site WebSocket hijacking)', async (t) => {
    const created = await server.json<{ token: { id: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), redirect: 'follow' })
    const cookie = `authenticationToken=${created.body.token.id}`
    const crossSite = await refused(ids.runningVm, { cookie, origin: 'https://evil.example' })
    t.same([crossSite.status, crossSite.body.code], [403, 'CROSS_SITE_REQUEST'])
    const fetchSite = await refused(ids.runningVm, { cookie, 'sec-fetch-site': 'cross-site' })
    t.same([fetchSite.status, fetchSite.body.code], [403, 'CROSS_SITE_REQUEST'])
    const own = await mustOpen(server.url, ids.runningVm, { cookie, origin: server.url })
    t.pass('the same cookie from this service\'s own page opens it')
    own.ws.close()
    await own.closed
  })

  t.test('an upgrade on another path is no route', async (t) => {
    const other = new WebSocket(`${server.url.replace(/^http/, 'ws')}/api/consoles/${ids.runningVm}/more`, { headers: admin })
    const status = await new Promise<number | undefined>((resolve) => other.on('unexpected-response', (_request, response) => resolve(response.statusCode)))
    t.equal(status, 404)
  })

  t.test('another upgrade (curl --http2 asks for h2c) is answered as the plain request it also is', async (t) => {
    const answer = await new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
      const req = request(`${server.url}/rest/v0/vms/${ids.runningVm}`, { headers: { ...admin, connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAAP__' } })
      req.on('response', (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () => resolve({ status: response.statusCode, body: Buffer.concat(chunks).toString() }))
      })
      req.on('error', reject)
      req.end()
    })
    t.equal(answer.status, 200)
    t.match(JSON.parse(answer.body), { id: ids.runningVm, name_label: 'web-01' })
  })

  t.test('a running VM: the handshake, its boot screen, a key typed shows in the next update', async (t) => {
    const { ws, viewer, closed } = await mustOpen(server.url, ids.runningVm, admin)
    t.equal(viewer.name, 'web-01')
    t.same([viewer.width, viewer.height], [640, 400])
    const first = viewer.updates
    viewer.requestUpdate(false)
    await viewer.until(() => viewer.updates > first)
    t.ok(viewer.cellLit(0, 0), 'the boot lines are drawn')
    // The login prompt is on row 7 (a title, the kernel, four units, a blank line), after "web-01 login: ".
    const column = 'web-01 login: '.length
    t.notOk(viewer.cellLit(column, 7), 'nothing typed yet')
    await typeAndSee(viewer, 'r')
    t.ok(viewer.cellLit(column, 7), 'the key is echoed in the framebuffer')
    t.match(await (await server.request('/metrics')).text(), /keel_open_streams\{kind="console"\} 1\b/, 'the console is counted')
    ws.close()
    t.same((await closed).code, 1005)
  })

  t.test('a host has a console too, and so has a paused VM; a suspended one has none', async (t) => {
    // XAPI serves only a running VM's console (console.ml, check_vm_is_running_here): the pool refuses a paused one's.
    const live = xapi ? ([[ids.master, 'xcp-ng-01']] as const) : ([[ids.master, 'xcp-ng-01'], [ids.pausedVm, 'ci-runner-01']] as const)
    for (const [id, name] of live) {
      const { ws, viewer, closed } = await mustOpen(server.url, id, admin)
      t.equal(viewer.name, name)
      ws.close()
      await closed
    }
    if (xapi) {
      const paused = await closedAfterUpgrade(server.url, ids.pausedVm, admin)
      t.equal(paused.code, 1011)
      t.match(paused.reason, /^the pool's console could not be opened: HTTP_HANDLER_FAILED\(\/console, 500\)/)
    }
    const controllers = (await server.json<Array<{ id: string; $container: string }>>('/rest/v0/vm-controllers?fields=id,$container')).body
    const controller = controllers.find((candidate) => candidate.$container === ids.master)
    if (controller === undefined) throw new Error('the master has no control domain')
    const byController = await mustOpen(server.url, controller.id, admin)
    t.equal(byController.viewer.name, 'xcp-ng-01', 'by its control domain\'s id, as XO 6 opens it: the host\'s console')
    byController.ws.close()
    await byController.closed
    const suspended = await refused(ids.suspendedVm, admin)
    t.same([suspended.status, suspended.body.code], [409, 'INCORRECT_STATE'])
  })

  t.test('what breaks the protocol or the bounds closes the socket', async (t) => {
    const text = await mustOpen(server.url, ids.runningVm, admin)
    text.ws.send('hello')
    t.same(await text.closed, { code: 1002, reason: 'RFB travels in binary messages' })
    // Over XAPI the pool's VNC server reads the RFB: it closes the connection, and the console ends.
    const poolClosed = { code: 1000, reason: 'the pool closed the console' }
    const unknown = await mustOpen(server.url, ids.runningVm, admin)
    unknown.ws.send(Buffer.from([99]))
    t.same(await unknown.closed, xapi ? poolClosed : { code: 1002, reason: 'unknown client message type 99' })
    const large = await mustOpen(server.url, ids.runningVm, admin)
    large.ws.send(Buffer.alloc(65 * 1024))
    t.equal((await large.closed).code, 1009)
    const version = new WebSocket(consoleUrl(server.url, ids.runningVm), { headers: admin })
    version.on('message', () => version.send(Buffer.from('RFB 003.003\n')))
    const closed = await new Promise<{ code: number; reason: string }>((resolve) => version.on('close', (code, reason) => resolve({ code, reason: reason.toString() })))
    t.same(closed, xapi ? poolClosed : { code: 1002, reason: 'unsupported protocol version RFB 003.003' })
  })

  t.test('at most 8 consoles per user; the ninth is refused, and one closed makes room', async (t) => {
    const user = await scopedUser(server, 'console-many@example.com', [{ resource: 'vm', action: '*' }])
    const headers = { authorization: user.auth }
    const open = []
    for (let index = 0; index < 8; index++) open.push(await mustOpen(server.url, ids.runningVm, headers))
    const ninth = await refused(ids.runningVm, headers)
    t.same([ninth.status, ninth.body.code, ninth.body.data], [429, 'TOO_MANY_CONSOLES', { limit: 8 }])
    const first = open.shift()
    first?.ws.close()
    await first?.closed
    open.push(await mustOpen(server.url, ids.runningVm, headers))
    t.pass('room again')
    for (const each of open) each.ws.close()
    await Promise.all(open.map((each) => each.closed))
  })

  t.test('a user whose role is taken away is disconnected', async (t) => {
    const user = await scopedUser(server, 'console-role@example.com', [{ resource: 'vm', action: 'console' }])
    const { closed, viewer } = await mustOpen(server.url, ids.runningVm, { authorization: user.auth })
    await typeAndSee(viewer, 'a')
    const roles = await server.json<Array<{ id: string; name: string }>>('/rest/v0/acl-roles?fields=id,name')
    const role = roles.body.find((each) => each.name === 'console-role@example.com role')
    const removed = await server.request(`/rest/v0/acl-roles/${role?.id ?? ''}/users/${user.id}`, { method: 'DELETE' })
    t.equal(removed.status, 204)
    t.same(await closed, { code: 1008, reason: 'you may no longer open this console' })
  })

  t.test('a privilege under a tag selector: the tag removed from the VM disconnects its console', async (t) => {
    const tag = async (present: boolean): Promise<number> => (await server.request(`/rest/v0/vms/${ids.runningVm}/tags/console-ok`, { method: present ? 'PUT' : 'DELETE' })).status
    t.equal(await tag(true), 204)
    const user = await scopedUser(server, 'console-tag@example.com', [{ resource: 'vm', action: 'console', selector: 'tags:console-ok' }])
    const { closed } = await mustOpen(server.url, ids.runningVm, { authorization: user.auth })
    t.equal(await tag(false), 204)
    t.same(await closed, { code: 1008, reason: 'you may no longer open this console' })
    const again = await refused(ids.runningVm, { authorization: user.auth })
    t.equal(again.status, 403, 'nor open it again')
  })

  t.test('a revoked token disconnects its console', async (t) => {
    const created = await server.json<{ token: { id: string; identifier: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({}), redirect: 'follow' })
    const { closed } = await mustOpen(server.url, ids.runningVm, { cookie: `authenticationToken=${created.body.token.id}` })
    const revoked = await server.request(`/rest/v0/users/me/authentication_tokens/${created.body.token.identifier}`, { method: 'DELETE', redirect: 'follow' })
    t.equal(revoked.status, 204)
    t.same(await closed, { code: 1008, reason: 'your credentials are no longer valid' })
  })

  t.test('an expired token disconnects its console', async (t) => {
    const created = await server.json<{ token: { id: string } }>('/rest/v0/users/me/authentication_tokens', { ...jsonBody({ expiresIn: '1 hour' }), redirect: 'follow' })
    const { closed } = await mustOpen(server.url, ids.runningVm, { cookie: `authenticationToken=${created.body.token.id}` })
    server.clock.advance(2 * 3600_000)
    t.same(await closed, { code: 1008, reason: 'your credentials are no longer valid' })
  })

  t.test('the VM stopping closes its console with the reason', async (t) => {
    const { closed } = await mustOpen(server.url, ids.runningVm, admin)
    const stop = await server.request(`/rest/v0/vms/${ids.runningVm}/actions/hard_shutdown`, { method: 'POST' })
    t.equal(stop.status, 202)
    t.same(await closed, { code: 1000, reason: 'the VM stopped' })
  })

  t.test('Keel stopping closes its consoles as going away', async (t) => {
    const { closed } = await mustOpen(server.url, ids.master, admin)
    await server.close()
    t.same(await closed, { code: 1001, reason: 'Keel is stopping' })
  })
})
