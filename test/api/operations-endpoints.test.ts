import t from 'tap'
import { basic, jsonBody, startServer } from '../helpers/server.js'

const SCRAPE_TOKEN = 'a-scrape-token-of-some-length'

t.test('GET /healthz: no credentials; 503 with the reason when the store or the driver fails', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const ok = await server.json('/healthz', { auth: null })
  t.equal(ok.status, 200)
  t.same(ok.body, { status: 'ok' })

  await server.app.driver.close()
  const closed = await server.json('/healthz', { auth: null })
  t.equal(closed.status, 503)
  t.same(closed.body, { error: 'unhealthy: the driver is not open', code: 'SERVICE_UNAVAILABLE', data: { reason: 'the driver is not open' } })
})

t.test('GET /healthz answers 503 when the store does not answer', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  server.app.db.close()
  const { status, body } = await server.json<{ code: string; data: { reason: string } }>('/healthz', { auth: null })
  t.equal(status, 503)
  t.equal(body.code, 'SERVICE_UNAVAILABLE')
  t.match(body.data.reason, /^the store does not answer/)
})

t.test('GET /metrics: Prometheus text for administrators or the scrape token', async (t) => {
  const server = await startServer({ config: { metrics: { token: SCRAPE_TOKEN } } })
  t.teardown(() => server.close())
  // Routes and methods alternate, so each answer is counted in its own series, not the previous one's.
  await server.request('/rest/v0/vms?limit=1')
  await server.request('/rest/v0/vms/nope')
  await server.request('/rest/v0/vms?limit=1')
  await server.request('/rest/v0/vms?limit=1', { method: 'HEAD' })

  const admin = await server.request('/metrics')
  t.equal(admin.status, 200)
  t.match(admin.headers.get('content-type'), /^text\/plain/)
  const text = await admin.text()
  t.match(text, /keel_http_requests_total\{route="\/rest\/v0\/vms",method="GET",status="200"\} 2\n/)
  t.match(text, /keel_http_requests_total\{route="\/rest\/v0\/vms",method="HEAD",status="200"\} 1\n/)
  t.match(text, /keel_http_requests_total\{route="\/rest\/v0\/vms\/:id",method="GET",status="404"\} 1\n/)
  t.match(text, /keel_http_request_duration_seconds_bucket\{le="0\.005",route="\/rest\/v0\/vms",method="GET"\}/)
  t.match(text, /keel_event_loop_delay_seconds\{stat="p99"\}/)
  t.match(text, /keel_process_memory_bytes\{kind="rss"\} \d+/)
  t.match(text, /keel_open_streams/)
  t.match(text, /keel_event_connections 0/)
  t.match(text, /keel_log_lines_dropped_total 0\n/)

  const scraper = await server.request('/metrics', { auth: null, headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } })
  t.equal(scraper.status, 200, 'the scrape token')

  const anonymous = await server.json('/metrics', { auth: null })
  t.equal(anonymous.status, 401)
  t.match(anonymous.body, { code: 'INVALID_CREDENTIALS' })
  const wrong = await server.json('/metrics', { auth: null, headers: { authorization: 'Bearer not-the-token' } })
  t.equal(wrong.status, 401)
  await server.request('/rest/v0/users', jsonBody({ email: 'watcher@example.net', password: 'watcher-password' }))
  const user = await server.json('/metrics', { auth: basic('watcher@example.net', 'watcher-password') })
  t.equal(user.status, 403)
  t.match(user.body, { code: 'FORBIDDEN' })
})

t.test('without a scrape token configured, a bearer value is just a token', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  t.equal((await server.request('/metrics', { auth: null, headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } })).status, 401)
})
