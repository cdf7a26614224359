import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http'
import t from 'tap'
import { generateLabSpec } from '../../src/driver/lab/generate.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

const LISTING = '/rest/v0/vms?fields=*'

/** A listing whose body is not read: once its headers arrive it holds its admission until the connection goes. */
function stalledListing(server: TestServer, path: string): Promise<{ request: ClientRequest; response: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(server.url + path, { headers: { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) } })
    request.on('response', (response) => {
      response.pause()
      resolve({ request, response })
    })
    request.on('error', reject)
    request.end()
  })
}

t.test('heavy listings beyond the limit are refused with 503 and Retry-After; writes and small reads are answered', async (t) => {
  // 10,000 VMs as whole records: tens of MiB, more than loopback's socket buffers hold, so an unread listing stays open.
  const server = await startServer({ config: { http: { maxHeavyListings: 2 } }, app: { labSpec: generateLabSpec({ vms: 10_000, hosts: 20 }) } })
  t.teardown(() => server.close())
  const [vm] = (await server.json<Array<{ id: string; name_label: string }>>('/rest/v0/vms?fields=id,name_label&limit=1')).body
  if (vm === undefined) throw new Error('no VM')
  // Asked twice, this listing is then answered from the cache: not a heavy read.
  const cachedPath = '/rest/v0/vms?fields=name_label&filter=power_state:Halted'
  await server.json(cachedPath)
  const cached = await server.json<string[]>(cachedPath)

  const stalled = [await stalledListing(server, LISTING), await stalledListing(server, `${LISTING}&ndjson=true`)]
  t.teardown(() => stalled.forEach(({ request }) => request.destroy()))
  for (const { response } of stalled) t.equal(response.statusCode, 200, 'two listings admitted and streaming')

  const refused = await server.json<{ code: string; data: Record<string, unknown> }>(`${LISTING}&filter=power_state:Running`)
  t.equal(refused.status, 503, 'a third heavy listing is refused')
  t.equal(refused.response.headers.get('retry-after'), '1')
  t.same(refused.body, {
    error: 'too many large listings are being served; retry shortly',
    code: 'SERVICE_UNAVAILABLE',
    data: { reason: 'busy', limit: 2, retryAfter: 1 },
  })
  const again = await server.json<string[]>(cachedPath)
  t.equal(again.status, 200, 'a listing answered from the cache is no heavy read')
  t.same(again.body, cached.body)

  const patched = await server.request(`/rest/v0/vms/${vm.id}`, jsonBody({ nameLabel: 'renamed under load' }, 'PATCH'))
  t.equal(patched.status, 204, 'a write is answered while the listings stream')
  const read = await server.json<{ name_label: string }>(`/rest/v0/vms/${vm.id}`)
  t.equal(read.status, 200, 'a single-object read is answered')
  t.equal(read.body.name_label, 'renamed under load', 'and sees the write')
  const hosts = await server.json<string[]>('/rest/v0/hosts')
  t.equal(hosts.status, 200, 'a listing of a small collection is no heavy read')
  t.equal(hosts.body.length, 20)

  // Their connections gone, the two release their admissions: a heavy listing is served again.
  const closed = stalled.map(({ response }) => new Promise((resolve) => response.on('close', resolve)))
  for (const { request } of stalled) request.destroy()
  await Promise.all(closed)
  let status = 503
  for (let attempt = 0; attempt < 100 && status === 503; attempt++) {
    const response = await server.request(`${LISTING}&limit=5`)
    await response.arrayBuffer()
    status = response.status
  }
  t.equal(status, 200, 'admitted again once the listings ended')
})

t.test('maxHeavyListings 0 admits every listing', async (t) => {
  const server = await startServer({ config: { http: { maxHeavyListings: 0 } }, app: { labSpec: generateLabSpec({ vms: 10_000, hosts: 20 }) } })
  t.teardown(() => server.close())
  const stalled = await Promise.all([1, 2, 3].map((n) => stalledListing(server, `${LISTING}&limit=${9000 + n}`)))
  t.teardown(() => stalled.forEach(({ request }) => request.destroy()))
  t.same(stalled.map(({ response }) => response.statusCode), [200, 200, 200])
  const fourth = await server.request(`${LISTING}&limit=3`)
  t.equal(fourth.status, 200)
  t.equal(((await fourth.json()) as unknown[]).length, 3)
})
