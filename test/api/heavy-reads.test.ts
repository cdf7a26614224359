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

t.test('with no line, heavy listings beyond the limit are refused with 503 and Retry-After; writes and small reads are answered', async (t) => {
  // 10,000 VMs as whole records: tens of MiB, more than loopback's socket buffers hold, so an unread listing stays open.
  const server = await startServer({ config: { http: { maxHeavyListings: 2, maxQueuedHeavyListings: 0 } }, app: { labSpec: generateLabSpec({ vms: 10_000, hosts: 20 }) } })
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

/** Waits until /metrics shows this many heavy reads served and waiting: the server has seen the requests sent before. */
async function heavyReadsAre(server: TestServer, expected: { running: number; waiting: number }): Promise<void> {
  const wanted = `keel_heavy_reads{state="running"} ${expected.running}\nkeel_heavy_reads{state="waiting"} ${expected.waiting}\n`
  for (;;) {
    const text = await (await server.request('/metrics')).text()
    if (text.includes(wanted)) return
  }
}

/** A request whose answer is awaited later: `answered` tells whether its response has begun. */
function pending(server: TestServer, path: string): { request: ClientRequest; answered: () => boolean; response: Promise<{ status: number; body: string }> } {
  let answered = false
  const request = httpRequest(server.url + path, { headers: { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) } })
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (incoming) => {
      answered = true
      const chunks: Buffer[] = []
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
      incoming.on('error', reject)
    })
    request.on('error', reject)
  })
  request.end()
  return { request, answered: () => answered, response }
}

t.test('a heavy listing beyond the limit waits its turn in a bounded line; writes are answered meanwhile', async (t) => {
  const server = await startServer({ config: { http: { maxHeavyListings: 1, maxQueuedHeavyListings: 1 } }, app: { labSpec: generateLabSpec({ vms: 10_000, hosts: 20 }) } })
  t.teardown(() => server.close())
  const [vm] = (await server.json<Array<{ id: string }>>('/rest/v0/vms?fields=id&limit=1')).body
  if (vm === undefined) throw new Error('no VM')

  const held = await stalledListing(server, LISTING)
  t.teardown(() => held.request.destroy())
  t.equal(held.response.statusCode, 200, 'the first heavy listing is admitted and holds its turn')
  const waiting = pending(server, `/rest/v0/vms?fields=name_label&filter=id:${vm.id}%20power_state:*`)
  t.teardown(() => waiting.request.destroy())
  await heavyReadsAre(server, { running: 1, waiting: 1 })

  const refused = await server.json<{ code: string; data: Record<string, unknown> }>(`${LISTING}&limit=9999`)
  t.equal(refused.status, 503, 'one more than the line holds is refused')
  t.equal(refused.response.headers.get('retry-after'), '1')
  t.same(refused.body, { error: 'too many large listings are being served; retry shortly', code: 'SERVICE_UNAVAILABLE', data: { reason: 'busy', limit: 1, retryAfter: 1 } })

  const patched = await server.request(`/rest/v0/vms/${vm.id}`, jsonBody({ nameLabel: 'renamed while a listing waits' }, 'PATCH'))
  t.equal(patched.status, 204, 'a write is answered while a listing holds the turn and another waits')
  t.notOk(waiting.answered(), 'before the waiting listing, which cannot run while the first holds its turn')

  held.request.destroy()
  const answer = await waiting.response
  t.equal(answer.status, 200, 'the waiting listing is served once the first is gone')
  t.same(JSON.parse(answer.body), [{ name_label: 'renamed while a listing waits', href: `/rest/v0/vms/${vm.id}` }], 'built after the write it waited behind')
})

t.test('a large cached listing is a heavy read until the socket has taken it', async (t) => {
  const server = await startServer({ config: { http: { maxHeavyListings: 1, maxQueuedHeavyListings: 0 } }, app: { labSpec: generateLabSpec({ vms: 10_000, hosts: 20 }) } })
  t.teardown(() => server.close())
  // 3,500 whole VMs: about 7 MiB, kept by the listing cache (up to 8 MiB a body) and more than loopback's buffers hold.
  const large = `${LISTING}&limit=3500`
  // Asked twice, the listing is kept; the next answers come from the cache.
  for (let time = 0; time < 2; time++) t.equal((await server.request(large).then(async (response) => (await response.arrayBuffer(), response))).status, 200)
  const full = await pending(server, large).response
  const cached = await stalledListing(server, large)
  t.teardown(() => cached.request.destroy())
  t.equal(cached.response.statusCode, 200)
  t.equal(cached.response.headers['content-length'], String(Buffer.byteLength(full.body)), 'the cached body, whole, with its length')
  await heavyReadsAre(server, { running: 1, waiting: 0 })

  const refused = await server.json<{ code: string }>(`${LISTING}&filter=power_state:Running`)
  t.equal(refused.status, 503, 'another heavy listing is refused while the cached body is being sent')
  t.equal(refused.body.code, 'SERVICE_UNAVAILABLE')
  const small = await server.json<string[]>('/rest/v0/hosts')
  t.equal(small.status, 200, 'a small listing is not')

  const read = new Promise((resolve) => cached.response.on('end', resolve))
  cached.response.resume()
  await read
  const after = await server.request(`${LISTING}&filter=power_state:Running`)
  await after.arrayBuffer()
  t.equal(after.status, 200, 'admitted again once the cached body was sent')
})

t.test('a listing during which a VM is renamed is answered whole and not kept; the next one is built anew and then kept', async (t) => {
  const server = await startServer({ app: { labSpec: generateLabSpec({ vms: 10_000, hosts: 20 }) } })
  t.teardown(() => server.close())
  const [vm] = (await server.json<Array<{ id: string }>>('/rest/v0/vms?fields=id&limit=1')).body
  if (vm === undefined) throw new Error('no VM')
  const streaming = await stalledListing(server, LISTING)
  t.teardown(() => streaming.request.destroy())
  t.equal(streaming.response.statusCode, 200, 'the listing has begun and waits for its reader')

  const patched = await server.request(`/rest/v0/vms/${vm.id}`, jsonBody({ nameLabel: 'renamed mid-listing' }, 'PATCH'))
  t.equal(patched.status, 204, 'a rename is answered while the listing streams')
  const chunks: Buffer[] = []
  streaming.response.on('data', (chunk: Buffer) => chunks.push(chunk))
  const read = new Promise((resolve) => streaming.response.on('end', resolve))
  streaming.response.resume()
  await read
  const during = JSON.parse(Buffer.concat(chunks).toString()) as Array<{ id: string }>
  t.equal(during.length, 10_000, 'the listing that saw the rename is whole')

  const after = await server.json<Array<{ id: string; name_label: string }>>(LISTING)
  t.equal(after.body.find(({ id }) => id === vm.id)?.name_label, 'renamed mid-listing', 'the next listing is not the one that saw the change')
  const again = await server.request(LISTING)
  t.equal(Buffer.from(await again.arrayBuffer()).toString(), JSON.stringify(after.body), 'and, with no change since, is answered the same')
})
