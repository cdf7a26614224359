import { createHash } from 'node:crypto'
import { get } from 'node:http'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadAssets } from '../../src/console/assets.js'
import { chooseEncoding } from '../../src/console/static-reply.js'
import { sameOriginPath } from '../../src/console/session.js'
import { jsonBody, startServer, ADMIN_EMAIL, ADMIN_PASSWORD, type TestServer } from '../helpers/server.js'

const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit & { auth: null } => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  body: new URLSearchParams(fields).toString(),
  auth: null,
})

const tokenCount = (server: TestServer): number => (server.app.db.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n

/** The body as sent, not decoded (fetch decodes what it is sent). */
function rawBody(url: string, headers: Record<string, string>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve(Buffer.concat(chunks)))
    }).on('error', reject)
  })
}

/** Signs in through the form and answers the cookie's `name=value`. */
async function signIn(server: TestServer): Promise<string> {
  const response = await server.request('/signin', form({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }))
  const cookie = response.headers.get('set-cookie') ?? ''
  return cookie.split(';')[0] ?? ''
}

t.test('encoding negotiation: brotli first on a tie, q=0 refuses, * stands for the rest', async (t) => {
  t.equal(chooseEncoding(undefined), 'identity')
  t.equal(chooseEncoding('gzip, deflate, br, zstd'), 'br')
  t.equal(chooseEncoding('gzip'), 'gzip')
  t.equal(chooseEncoding('br;q=0, gzip;q=0.5'), 'gzip')
  t.equal(chooseEncoding('br;q=0.2, gzip;q=0.8'), 'gzip')
  t.equal(chooseEncoding('*'), 'br')
  t.equal(chooseEncoding('*;q=0'), 'identity')
  t.equal(chooseEncoding('identity'), 'identity')
})

t.test('the asset table: files of known types and the fixed library files only, a version that follows their bytes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-console-assets-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'main.js'), 'export const a = 1\n')
  writeFileSync(join(dir, 'console.css'), 'body { margin: 0 }\n')
  writeFileSync(join(dir, 'notes.txt'), 'not served')
  writeFileSync(join(dir, '.hidden.js.swp'), 'not served')
  const first = loadAssets(dir)
  t.same([...first.byName.keys()].sort(), ['console.css', 'hooks.mjs', 'htm.mjs', 'main.js', 'preact.mjs', 'uplot.css', 'uplot.js'])
  const main = first.byName.get('main.js')
  t.same(gunzipSync(main?.gzip ?? Buffer.alloc(0)).toString(), 'export const a = 1\n')
  t.same(brotliDecompressSync(main?.br ?? Buffer.alloc(0)).toString(), 'export const a = 1\n')
  t.equal(loadAssets(dir).version, first.version, 'the same bytes, the same version')
  writeFileSync(join(dir, 'main.js'), 'export const a = 2\n')
  t.not(loadAssets(dir).version, first.version, 'a changed file, a new version')
  writeFileSync(join(dir, 'preact.mjs'), '')
  t.throws(() => loadAssets(dir), /preact\.mjs is both the console's and a library's/)
})

t.test('redirect targets: only paths of this origin', async (t) => {
  t.equal(sameOriginPath('/#/vms'), '/#/vms')
  t.equal(sameOriginPath('/rest/v0/docs?x=1'), '/rest/v0/docs?x=1')
  for (const hostile of ['//evil.example/', '/\\evil.example', 'https://evil.example/', 'javascript:alert(1)', '', '/a\nb', undefined, null]) {
    t.equal(sameOriginPath(hostile), '/', `${JSON.stringify(hostile)} becomes the root`)
  }
})

t.test('pages, assets and their headers', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())

  t.test('without a session, / sends to the sign-in form, which carries no script', async (t) => {
    const root = await server.request('/', { auth: null })
    t.equal(root.status, 302)
    t.equal(root.headers.get('location'), '/signin')
    const page = await server.request('/signin?redirect=%2F%2Fevil.example', { auth: null })
    t.equal(page.status, 200)
    const html = await page.text()
    t.match(html, /<form class="signin-form" method="post" action="\/signin">/)
    t.match(html, /name="redirect" value="\/"/, 'another origin is not kept')
    t.notMatch(html, /<script/)
    t.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'; /)
  })

  t.test('a redirect kept is escaped into the form', async (t) => {
    const html = await (await server.request('/signin?redirect=%2F%23%2Fvms%22%3E%3Cb%3E', { auth: null })).text()
    t.match(html, /value="\/#\/vms&quot;&gt;&lt;b&gt;"/)
  })

  const cookie = await signIn(server)

  t.test('with a session, / is the console: a strict policy that allows only the import map inline', async (t) => {
    const response = await server.request('/', { headers: { cookie } })
    t.equal(response.status, 200)
    const html = await response.text()
    const importMap = /<script type="importmap">(.*?)<\/script>/.exec(html)?.[1] ?? ''
    const hash = createHash('sha256').update(importMap).digest('base64')
    const policy = response.headers.get('content-security-policy') ?? ''
    t.match(policy, `script-src 'self' 'sha256-${hash}';`)
    t.match(policy, "frame-ancestors 'none'")
    t.match(policy, "default-src 'none'")
    t.notMatch(policy, 'unsafe-inline')
    t.equal(response.headers.get('x-content-type-options'), 'nosniff')
    t.equal(response.headers.get('cache-control'), 'no-cache, private')
    t.equal([...html.matchAll(/<script\b/g)].length, 2, 'the import map and the one module')
    const etag = response.headers.get('etag') ?? ''
    const again = await server.request('/', { headers: { cookie, 'if-none-match': etag } })
    t.equal(again.status, 304)
  })

  const page = await (await server.request('/', { headers: { cookie } })).text()
  const main = /<script type="module" src="([^"]+)"/.exec(page)?.[1] ?? ''

  t.test('a versioned file: immutable, a strong tag per encoding, compressed as accepted, 304 when held', async (t) => {
    t.match(main, /^\/console\/[\w-]{12}\/main\.js$/)
    const plain = await server.request(main, { auth: null, headers: { 'accept-encoding': 'identity' } })
    t.equal(plain.status, 200)
    t.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable')
    t.equal(plain.headers.get('content-type'), 'text/javascript; charset=utf-8')
    t.equal(plain.headers.get('x-content-type-options'), 'nosniff')
    t.equal(plain.headers.get('vary'), 'Accept-Encoding')
    const etag = plain.headers.get('etag') ?? ''
    t.match(etag, /^"[\w-]{27}"$/, 'strong')
    const text = Buffer.from(await plain.arrayBuffer())

    const br = await server.request(main, { auth: null, headers: { 'accept-encoding': 'br, gzip' } })
    t.equal(br.headers.get('content-encoding'), 'br')
    t.equal(br.headers.get('etag'), `${etag.slice(0, -1)}-br"`)
    const brBytes = await rawBody(server.url + main, { 'accept-encoding': 'br, gzip' })
    t.same(brotliDecompressSync(brBytes), text, 'brotli as sent decodes to the file')
    const gzip = await server.request(main, { auth: null, headers: { 'accept-encoding': 'gzip' } })
    t.equal(gzip.headers.get('content-encoding'), 'gzip')
    t.equal(gzip.headers.get('etag'), `${etag.slice(0, -1)}-gzip"`)
    const gzBytes = await rawBody(server.url + main, { 'accept-encoding': 'gzip' })
    t.same(gunzipSync(gzBytes), text, 'gzip as sent decodes to the file')
    t.ok(brBytes.length < text.length && gzBytes.length < text.length)

    const held = await server.request(main, { auth: null, headers: { 'accept-encoding': 'identity', 'if-none-match': etag } })
    t.equal(held.status, 304)
    t.equal(await held.text(), '')
  })

  t.test('the libraries are served by fixed name, and nothing else of node_modules', async (t) => {
    const version = main.split('/')[2] ?? ''
    for (const name of ['preact.mjs', 'hooks.mjs', 'htm.mjs', 'uplot.js', 'uplot.css']) {
      t.equal((await server.request(`/console/${version}/${name}`, { auth: null })).status, 200, name)
    }
    for (const hostile of ['package.json', '..%2Fpackage.json', '..%2F..%2Fpackage.json', 'preact.mjs.map', '%2E%2E', 'console.css%00.js']) {
      const response = await server.request(`/console/${version}/${hostile}`, { auth: null })
      t.equal(response.status, 404, hostile)
      t.match(((await response.json()) as { code: string }).code, /^NO_SUCH_(OBJECT|ROUTE)$/)
    }
    t.equal((await server.request(`/console/${version}/../../package.json`, { auth: null })).status, 404)
  })

  t.test("another version's files are not served: an old page reloads rather than mixing versions", async (t) => {
    const response = await server.request('/console/AAAAAAAAAAAA/main.js', { auth: null })
    t.equal(response.status, 404)
  })
})

t.test('signing in and out', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())

  t.test('a form sign-in sets an HttpOnly, SameSite=Lax cookie with the configured validity and goes to the redirect', async (t) => {
    const before = tokenCount(server)
    const response = await server.request('/signin', form({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD, redirect: '/#/vms' }))
    t.equal(response.status, 303)
    t.equal(response.headers.get('location'), '/#/vms')
    const cookie = response.headers.get('set-cookie') ?? ''
    t.match(cookie, /^authenticationToken=[\w-]{43}; Max-Age=2592000; Path=\/; HttpOnly; SameSite=Lax$/)
    t.equal(tokenCount(server), before + 1)
    const me = await server.request('/rest/v0/users/me', { headers: { cookie: cookie.split(';')[0] ?? '' } })
    t.equal(me.status, 307, 'the cookie authenticates')
  })

  t.test('behind TLS the cookie is Secure', async (t) => {
    const response = await server.request('/signin', form({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { 'x-forwarded-proto': 'https' }))
    t.match(response.headers.get('set-cookie') ?? '', /; Secure/)
  })

  t.test('a redirect to another origin is dropped', async (t) => {
    for (const hostile of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      const response = await server.request('/signin', form({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD, redirect: hostile }))
      t.equal(response.headers.get('location'), '/', hostile)
    }
  })

  t.test('a JSON sign-in answers the user; a failed one is 401 as the API words it, without a Basic challenge, and creates no token', async (t) => {
    const ok = await server.json<{ email: string; permission: string }>('/signin', { ...jsonBody({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }), auth: null })
    t.equal(ok.status, 200)
    t.match(ok.body, { email: ADMIN_EMAIL, permission: 'admin' })
    t.notMatch(JSON.stringify(ok.body), /token/i, 'the secret is only in the HttpOnly cookie')
    const before = tokenCount(server)
    const bad = await server.json<{ code: string }>('/signin', { ...jsonBody({ email: ADMIN_EMAIL, password: 'wrong' }), auth: null })
    t.equal(bad.status, 401)
    t.same(bad.body, { error: 'invalid credentials', code: 'INVALID_CREDENTIALS' })
    t.equal(bad.response.headers.get('www-authenticate'), null)
    t.equal(bad.response.headers.get('set-cookie'), null)
    t.equal(tokenCount(server), before)
  })

  t.test('a failed form sign-in goes back to the form, the redirect kept, no cookie, no token', async (t) => {
    const before = tokenCount(server)
    const response = await server.request('/signin', form({ email: 'nobody@example.org', password: 'x', redirect: '/#/vms' }))
    t.equal(response.status, 303)
    t.equal(response.headers.get('location'), '/signin?failed=1&redirect=%2F%23%2Fvms')
    t.equal(response.headers.get('set-cookie'), null)
    t.equal(tokenCount(server), before)
    const page = await (await server.request('/signin?failed=1&redirect=%2F%23%2Fvms', { auth: null })).text()
    t.match(page, 'Invalid email or password.')
  })

  t.test('bad input: 422 naming the field, 415 for another type, 413 past the limit; no token', async (t) => {
    const before = tokenCount(server)
    const missing = await server.json<{ code: string; data: unknown }>('/signin', form({ email: ADMIN_EMAIL }))
    t.equal(missing.status, 422)
    t.same(missing.body.data, { errors: [{ path: 'body.password', message: 'is required' }] })
    const notObject = await server.json<{ code: string }>('/signin', { ...jsonBody([ADMIN_EMAIL]), auth: null })
    t.equal(notObject.status, 422)
    const wrongType = await server.json<{ code: string }>('/signin', { ...jsonBody({ email: ADMIN_EMAIL, password: 42 }), auth: null })
    t.equal(wrongType.status, 422)
    const text = await server.json<{ code: string }>('/signin', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x', auth: null })
    t.equal(text.status, 415)
    t.equal(text.body.code, 'UNSUPPORTED_MEDIA_TYPE')
    const huge = await server.json<{ code: string }>('/signin', form({ email: ADMIN_EMAIL, password: 'x'.repeat(20_000) }))
    t.equal(huge.status, 413)
    t.equal(huge.body.code, 'BODY_TOO_LARGE')
    t.equal(tokenCount(server), before)
  })

  t.test('signing out revokes the token and clears the cookie', async (t) => {
    const cookie = await signIn(server)
    const before = tokenCount(server)
    const response = await server.request('/signout', { method: 'POST', headers: { cookie }, auth: null })
    t.equal(response.status, 303)
    t.equal(response.headers.get('location'), '/signin')
    t.match(response.headers.get('set-cookie') ?? '', /^authenticationToken=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax$/)
    t.equal(tokenCount(server), before - 1)
    const after = await server.json<{ code: string }>('/rest/v0/vms', { headers: { cookie } })
    t.equal(after.status, 401)
    t.equal(after.body.code, 'INVALID_CREDENTIALS')
    t.equal(after.response.headers.get('www-authenticate'), null, 'no password prompt over the console')
    t.equal((await server.request('/', { headers: { cookie } })).status, 302, 'the console asks to sign in again')
  })

  t.test('signing out without a session changes nothing', async (t) => {
    const before = tokenCount(server)
    const response = await server.request('/signout', { method: 'POST', headers: { cookie: 'authenticationToken=unknown' }, auth: null })
    t.equal(response.status, 303)
    t.equal(tokenCount(server), before)
  })

  t.test('Basic clients still get their challenge', async (t) => {
    const response = await server.request('/rest/v0/vms', { auth: null })
    t.equal(response.headers.get('www-authenticate'), 'Basic realm="keel"')
  })
})
