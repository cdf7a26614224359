import { createServer, type IncomingMessage, type Server } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import t from 'tap'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer } from '../helpers/server.js'
import { adminId, BRIDGE, bridgeEnv, createToken, runBridge, startBridge } from './bridge.js'

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
}

t.test('start-up: a missing URL or credential stops the process with exit code 2, naming the variables', async (t) => {
  const noUrl = await runBridge({ KEEL_TOKEN: 'x' })
  t.equal(noUrl.code, 2)
  t.match(noUrl.stderr, /missing configuration:\n  - KEEL_URL \(or XO_URL\)/)
  t.notMatch(noUrl.stderr, /KEEL_TOKEN \(or XO_TOKEN\)/, 'the credential is there')
  t.equal(noUrl.stdout, '', 'nothing but protocol on stdout')

  const noCredentials = await runBridge({ KEEL_URL: 'http://127.0.0.1:9' })
  t.equal(noCredentials.code, 2)
  t.match(noCredentials.stderr, /KEEL_TOKEN \(or XO_TOKEN\), or both KEEL_USERNAME and KEEL_PASSWORD .*; none is set/)
  t.notMatch(noCredentials.stderr, /KEEL_URL/)

  const onlyUsername = await runBridge({ XO_URL: 'http://127.0.0.1:9', XO_USERNAME: 'someone' })
  t.equal(onlyUsername.code, 2)
  t.match(onlyUsername.stderr, /KEEL_PASSWORD is not set/)

  const nothing = await runBridge({})
  t.equal(nothing.code, 2)
  t.match(nothing.stderr, /KEEL_URL[^]*KEEL_TOKEN/, 'every missing variable at once')

  const badTimeout = await runBridge({ KEEL_URL: 'http://127.0.0.1:9', KEEL_TOKEN: 'x', KEEL_MCP_TIMEOUT_MS: 'soon' })
  t.equal(badTimeout.code, 2)
  t.match(badTimeout.stderr, /KEEL_MCP_TIMEOUT_MS must be a positive whole number/)
})

t.test('start-up failure as an MCP client sees it: the connection fails and stderr says why', async (t) => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BRIDGE], env: bridgeEnv({ KEEL_URL: 'http://127.0.0.1:9' }), stderr: 'pipe' })
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const client = new Client({ name: 'keel-mcp-test', version: '1.0.0' })
  await t.rejects(client.connect(transport))
  t.match(stderr, /missing configuration/)
})

t.test('the service cannot be reached', async (t) => {
  t.test('nothing listens at the URL', async (t) => {
    const closed = createServer()
    const url = await listen(closed)
    await new Promise((resolve) => closed.close(resolve))
    const bridge = await startBridge({ KEEL_URL: url, KEEL_TOKEN: 'whatever' })
    t.teardown(() => bridge.close())
    const check = await bridge.call('check_connection')
    t.equal(check.result.isError, true)
    t.equal(
      check.text,
      `Connection test failed: Cannot connect to Keel at ${url} (ECONNREFUSED): nothing is listening there. Check KEEL_URL and that the service is running.`,
    )
    const list = await bridge.call('list_vms')
    t.equal(list.result.isError, true)
    t.match(list.text, /^Failed to list VMs: Cannot connect to Keel/)
    const summary = await bridge.call('get_infrastructure_summary')
    t.equal(summary.result.isError, true, 'a tool with an output schema fails the same way')
    t.notOk(summary.result.structuredContent)
  })

  t.test('the URL has no protocol: the bridge starts and every tool says so', async (t) => {
    const bridge = await startBridge({ KEEL_URL: '127.0.0.1:8080', KEEL_TOKEN: 'whatever' })
    t.teardown(() => bridge.close())
    const check = await bridge.call('check_connection')
    t.equal(check.result.isError, true)
    t.equal(
      check.text,
      'Connection test failed: KEEL_URL is "127.0.0.1:8080", which has no protocol: write it with http:// or https:// (e.g. http://127.0.0.1:8080).',
    )
    const hostOnly = await startBridge({ XO_URL: 'keel.example.net', XO_TOKEN: 'whatever' })
    t.teardown(() => hostOnly.close())
    t.match((await hostOnly.call('list_pools')).text, /^Failed to list pools: XO_URL is "keel\.example\.net", which has no protocol/)
    t.match(bridge.stderr(), /warning: KEEL_URL/, 'and the log warns at start')
  })

  t.test('the service does not answer in time', async (t) => {
    const silent = createServer()
    const received = once(silent, 'request') as Promise<[IncomingMessage]>
    const url = await listen(silent)
    t.teardown(() => {
      silent.closeAllConnections()
      silent.close()
    })
    // Three seconds: a bridge starved of CPU for less still sends its request before giving up.
    const bridge = await startBridge({ KEEL_URL: url, KEEL_TOKEN: 'whatever', KEEL_MCP_TIMEOUT_MS: '3000' })
    t.teardown(() => bridge.close())
    // The silent server never answers: the call comes back only through the bridge's timeout.
    const check = await bridge.call('get_vm_details', { vm_id: 'abc' })
    t.equal(check.result.isError, true)
    t.equal(
      check.text,
      `Failed to get VM details: Request to Keel at ${url} timed out after 3000 ms. The service may be overloaded or a firewall may be dropping the connection.`,
    )
    // This process may read the request after the bridge's answer: both come in on their own.
    const [request] = await received
    t.equal(request.url, '/rest/v0/vms/abc')
    t.equal(request.headers.cookie, 'authenticationToken=whatever')
  })
})

t.test('the bridge only ever sends GET, with the credential of its mode', async (t) => {
  const seen: Array<{ method: string | undefined; url: string | undefined; authorization: string | undefined; cookie: string | undefined }> = []
  const recorder = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization, cookie: req.headers.cookie })
    res.setHeader('content-type', 'application/json')
    res.end(req.url?.startsWith('/rest/v0/vms/') === true ? '{}' : '[]')
  })
  const url = await listen(recorder)
  t.teardown(() => recorder.close())
  const bridge = await startBridge({ KEEL_URL: url, KEEL_USERNAME: 'u@example.net', KEEL_PASSWORD: 'p:w' })
  t.teardown(() => bridge.close())
  for (const [name, args] of [
    ['check_connection', {}],
    ['list_pools', {}],
    ['list_hosts', { filter: 'a b', limit: 1 }],
    ['list_vms', {}],
    ['list_vdis', {}],
    ['list_srs', {}],
    ['list_networks', {}],
    ['get_vm_details', { vm_id: 'a/b' }],
    ['get_sr_details', { sr_id: 'x' }],
    ['get_network_details', { network_id: 'y' }],
    ['get_infrastructure_summary', {}],
    ['get_pool_dashboard', { pool_id: 'p' }],
  ] as const) {
    await bridge.call(name, args)
  }
  t.ok(seen.length >= 14)
  t.ok(seen.every((request) => request.method === 'GET'), 'GET only')
  t.ok(seen.every((request) => request.authorization === basic('u@example.net', 'p:w') && request.cookie === undefined), 'Basic only')
  t.ok(seen.some((request) => request.url === '/rest/v0/hosts?fields=id%2Cname_label%2CproductBrand%2Cversion%2Cpower_state&filter=a+b&limit=1'))
  t.ok(seen.some((request) => request.url === '/rest/v0/vms/a%2Fb'), 'ids are URL-encoded')
  t.ok(seen.some((request) => request.url === '/rest/v0/pools/p/dashboard?ndjson=false'))
})

t.test('redirects are followed on the same server only', async (t) => {
  const seen: Array<{ url: string | undefined; cookie: string | undefined }> = []
  const other = createServer((req, res) => {
    seen.push({ url: `other ${req.url}`, cookie: req.headers.cookie })
    res.end('[]')
  })
  const otherUrl = await listen(other)
  const redirecting = createServer((req, res) => {
    seen.push({ url: req.url, cookie: req.headers.cookie })
    if (req.url?.startsWith('/rest/v0/pools?') === true) res.writeHead(307, { location: '/moved/pools' }).end()
    else if (req.url === '/moved/pools') res.writeHead(200, { 'content-type': 'application/json' }).end('[{"id":"p"}]')
    else res.writeHead(302, { location: `${otherUrl}/rest/v0/vms` }).end()
  })
  const url = await listen(redirecting)
  t.teardown(() => {
    redirecting.close()
    other.close()
  })
  const bridge = await startBridge({ KEEL_URL: url, KEEL_TOKEN: 'secret' })
  t.teardown(() => bridge.close())
  const pools = await bridge.call('list_pools')
  t.same(JSON.parse(pools.text), [{ id: 'p' }], 'followed')
  t.same(seen.slice(-1), [{ url: '/moved/pools', cookie: 'authenticationToken=secret' }])
  const vms = await bridge.call('list_vms')
  t.equal(vms.result.isError, true)
  t.match(vms.text, `Keel redirected /rest/v0/vms to another server (${otherUrl}); the bridge does not send credentials there.`)
  t.notOk(seen.some((request) => request.url?.startsWith('other') === true), 'the other server got nothing')
})

t.test('credentials the service refuses', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const userId = await adminId(server)

  t.test('a wrong password names the username and password variables', async (t) => {
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_USERNAME: ADMIN_EMAIL, KEEL_PASSWORD: 'wrong' })
    t.teardown(() => bridge.close())
    const { result, text } = await bridge.call('list_pools')
    t.equal(result.isError, true)
    t.equal(
      text,
      `Failed to list pools: Authentication failed: Keel refused the username and password in KEEL_USERNAME and KEEL_PASSWORD (user ${ADMIN_EMAIL}). Check both values.`,
    )
  })

  const tokenRefused =
    'Authentication failed: Keel refused the token in KEEL_TOKEN; it is wrong, has expired or has been revoked. Create a new token (keel token create, or POST /rest/v0/users/me/authentication_tokens) and update KEEL_TOKEN.'

  t.test('a wrong token', async (t) => {
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_TOKEN: 'not-a-token' })
    t.teardown(() => bridge.close())
    const { result, text } = await bridge.call('check_connection')
    t.equal(result.isError, true)
    t.equal(text, `Connection test failed: ${tokenRefused}`)
  })

  t.test('a revoked token', async (t) => {
    const token = await createToken(server, userId)
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_TOKEN: token.id })
    t.teardown(() => bridge.close())
    t.notOk((await bridge.call('check_connection')).result.isError, 'works before revocation')
    const revoked = await server.request(`/rest/v0/users/${userId}/authentication_tokens/${token.identifier}`, { method: 'DELETE' })
    t.equal(revoked.status, 204)
    const { result, text } = await bridge.call('list_vms')
    t.equal(result.isError, true)
    t.equal(text, `Failed to list VMs: ${tokenRefused}`)
  })

  t.test('an expired token', async (t) => {
    const token = await createToken(server, userId, { expiresIn: '1 minute' })
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_TOKEN: token.id })
    t.teardown(() => bridge.close())
    t.notOk((await bridge.call('list_pools')).result.isError, 'works while valid')
    server.clock.advance(2 * 60_000)
    const { result, text } = await bridge.call('list_pools')
    t.equal(result.isError, true)
    t.equal(text, `Failed to list pools: ${tokenRefused}`)
  })
})

t.test('403 and 404', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const email = 'viewer@example.net'
  const password = 'viewer-password-1'
  const created = await server.json('/rest/v0/users', jsonBody({ email, password }))
  t.equal(created.status, 201)

  const vmIds = (await server.json<string[]>('/rest/v0/vms')).body.map((href) => href.split('/').pop() as string)
  const srId = ((await server.json<string[]>('/rest/v0/srs')).body[0] as string).split('/').pop() as string

  t.test('a user without privileges sees nothing, and a refusal names the missing privilege', async (t) => {
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_USERNAME: email, KEEL_PASSWORD: password })
    t.teardown(() => bridge.close())
    const vms = await bridge.call('list_vms')
    t.notOk(vms.result.isError, 'a listing shows what may be read: nothing')
    t.notMatch(vms.text, /web-01/)
    const vm = await bridge.call('get_vm_details', { vm_id: vmIds[0] })
    t.equal(vm.result.isError, true)
    t.equal(
      vm.text,
      `Failed to get VM details: Permission denied: user ${email} lacks the privilege vm:read. Ask an administrator to grant it through a role, or use an administrator account.`,
    )
    const dashboard = await bridge.call('get_pool_dashboard', { pool_id: 'any' })
    t.match(dashboard.text, /^Failed to get pool dashboard: Permission denied: .* lacks the privilege pool:read\./)
  })

  t.test('with a token of that user too', async (t) => {
    const viewer = await server.json<Array<{ id: string; email: string }>>('/rest/v0/users?fields=id,email')
    const viewerId = viewer.body.find((user) => user.email === email)?.id as string
    const token = await createToken(server, viewerId, {}, basic(email, password))
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_TOKEN: token.id })
    t.teardown(() => bridge.close())
    t.match((await bridge.call('get_sr_details', { sr_id: srId })).text, /Permission denied: the token in KEEL_TOKEN lacks the privilege sr:read\./)
  })

  t.test('with a role, the assistant sees exactly what the user may read', async (t) => {
    const viewer = await server.json<Array<{ id: string; email: string }>>('/rest/v0/users?fields=id,email')
    const viewerId = viewer.body.find((user) => user.email === email)?.id as string
    const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: 'web readers' }))
    await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: role.body.id, resource: 'vm', action: 'read', effect: 'allow', selector: 'name_label:web-01' }))
    await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${viewerId}`, { method: 'PUT' })
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_USERNAME: email, KEEL_PASSWORD: password })
    t.teardown(() => bridge.close())
    const vms = await bridge.call('list_vms')
    t.notOk(vms.result.isError)
    t.match(vms.text, /web-01/)
    t.notMatch(vms.text, /db-01|staging-app/, 'and nothing else')
  })

  t.test('an unknown id says what was not found and where valid ids come from', async (t) => {
    const bridge = await startBridge({ KEEL_URL: server.url, KEEL_USERNAME: ADMIN_EMAIL, KEEL_PASSWORD: ADMIN_PASSWORD })
    t.teardown(() => bridge.close())
    const vm = await bridge.call('get_vm_details', { vm_id: 'no-such-vm' })
    t.equal(vm.result.isError, true)
    t.equal(vm.text, 'Failed to get VM details: Not found: no such VM no-such-vm. Use list_vms to find valid ids.')
    t.equal((await bridge.call('get_sr_details', { sr_id: 'nope' })).text, 'Failed to get SR details: Not found: no such SR nope. Use list_srs to find valid ids.')
    t.equal(
      (await bridge.call('get_network_details', { network_id: 'nope' })).text,
      'Failed to get network details: Not found: no such network nope. Use list_networks to find valid ids.',
    )
    const dashboard = await bridge.call('get_pool_dashboard', { pool_id: 'nope' })
    t.equal(dashboard.result.isError, true)
    t.equal(dashboard.text, 'Failed to get pool dashboard: Not found: no such pool nope. Use list_pools to find valid pool ids.')
  })
})
