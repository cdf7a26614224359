import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import type { TestScope } from '../helpers/lab.js'
import { startServer, ADMIN_EMAIL, ADMIN_PASSWORD, type TestServer } from '../helpers/server.js'

const INDEX = '<!doctype html><html><head><script type="module" crossorigin src="./assets/index-AbCd_f12.js"></script></head><body><div id="app"></div></body></html>\n'
const SCRIPT = `export const app = ${JSON.stringify('x'.repeat(4096))}\n`
const SECRET = 'the secret beside the build'

/** A stand-in for a build of XO 6, in the layout Vite writes, beside a file that must stay out of reach. */
function fakeBuild(t: TestScope): { dir: string; root: string } {
  const dir = mkdtempSync(join(tmpdir(), 'keel-xo6-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const root = join(dir, 'dist')
  mkdirSync(join(root, 'assets'), { recursive: true })
  writeFileSync(join(root, 'index.html'), INDEX)
  writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
  writeFileSync(join(root, 'assets', 'index-AbCd_f12.js'), SCRIPT)
  writeFileSync(join(root, 'assets', 'font-Zz9-yy8x.woff2'), Buffer.from([0x77, 0x4f, 0x46, 0x32, 1, 2, 3, 4]))
  writeFileSync(join(root, '.env'), SECRET)
  writeFileSync(join(dir, 'secret.txt'), SECRET)
  symlinkSync(join(dir, 'secret.txt'), join(root, 'link-out.txt'))
  symlinkSync(dir, join(root, 'folder-out'))
  symlinkSync(join(root, 'favicon.svg'), join(root, 'link-in.svg'))
  return { dir, root }
}

/** A request with its path sent as written: fetch would fold `..` and `%2e%2e` before sending. */
function raw(server: TestServer, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const { hostname, port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    request({ hostname, port, path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }))
    })
      .on('error', reject)
      .end()
  })
}

async function signIn(server: TestServer, redirect = '/'): Promise<{ cookie: string; location: string | null }> {
  const response = await server.request('/signin', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD, redirect }).toString(),
    auth: null,
    redirect: 'manual',
  })
  return { cookie: (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '', location: response.headers.get('location') }
}

t.test('[http] xo6Root: an absolute path, checked at start for a build', async (t) => {
  const { dir, root } = fakeBuild(t)
  const file = join(dir, 'keel.toml')
  writeFileSync(file, '[http]\nxo6Root = "dist"\n')
  t.throws(() => loadConfig(file), /http\.xo6Root: expected an absolute path, got "dist"/)
  writeFileSync(file, `[http]\nxo6Root = ${JSON.stringify(`${root}/assets/..`)}\n`)
  t.equal(loadConfig(file).http.xo6Root, root, 'resolved')
  t.equal(loadConfig().http.xo6Root, undefined, 'off by default')
  await t.rejects(startServer({ config: { http: { xo6Root: join(root, 'assets') } } }), /http\.xo6Root: .* holds no index\.html/)
})

t.test('unset, nothing is served at /v6/', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const { cookie } = await signIn(server)
  for (const path of ['/v6', '/v6/', '/v6/index.html']) {
    const response = await server.request(path, { headers: { cookie }, auth: null, redirect: 'manual' })
    t.equal(response.status, 404, path)
    t.equal(((await response.json()) as { code: string }).code, 'NO_SUCH_ROUTE')
  }
})

t.test('set, the build is served at /v6/ to a signed-in browser', async (t) => {
  const { root } = fakeBuild(t)
  const server = await startServer({ config: { http: { xo6Root: root } } })
  t.teardown(() => server.close())
  const get = (path: string, headers: Record<string, string> = {}): Promise<Response> => server.request(path, { headers, auth: null, redirect: 'manual' })

  t.test('without a valid cookie, a visit goes to the sign-in page and comes back after it', async (t) => {
    const bare = await get('/v6')
    t.equal(bare.status, 302)
    t.equal(bare.headers.get('location'), '/v6/', 'the page needs its slash: its files are named relative to it')
    for (const [path, target] of [
      ['/v6/', '/v6/'],
      ['/v6/assets/index-AbCd_f12.js?x=1', '/v6/assets/index-AbCd_f12.js?x=1'],
    ] as const) {
      for (const cookie of [undefined, 'authenticationToken=not-a-token']) {
        const response = await get(path, cookie === undefined ? {} : { cookie })
        t.equal(response.status, 302, `${path} with ${cookie ?? 'no cookie'}`)
        t.equal(response.headers.get('location'), `/signin?redirect=${encodeURIComponent(target)}`)
        t.equal(await response.text(), '', 'nothing of the build')
      }
    }
    const form = await get('/signin?redirect=%2Fv6%2F')
    t.match(await form.text(), /name="redirect" value="\/v6\/"/)
    const { location } = await signIn(server, '/v6/')
    t.equal(location, '/v6/', 'back after signing in')
  })

  const { cookie } = await signIn(server)

  t.test('the page: revalidated on every visit, with the security headers and the policy XO 6 runs under', async (t) => {
    const response = await get('/v6/', { cookie, 'accept-encoding': 'identity' })
    t.equal(response.status, 200)
    t.equal(await response.text(), INDEX)
    t.equal(response.headers.get('content-type'), 'text/html; charset=utf-8')
    t.equal(response.headers.get('cache-control'), 'no-cache, private')
    t.equal(response.headers.get('x-content-type-options'), 'nosniff')
    t.equal(response.headers.get('referrer-policy'), 'same-origin')
    const policy = response.headers.get('content-security-policy') ?? ''
    for (const directive of ["default-src 'none'", "script-src 'self';", "frame-ancestors 'none'", "base-uri 'none'", "connect-src 'self'", "style-src 'self' 'unsafe-inline'", "font-src 'self'"]) {
      t.match(policy, directive)
    }
    t.notMatch(policy, /script-src[^;]*unsafe/, 'no script but its files')
    const etag = response.headers.get('etag') ?? ''
    t.equal((await get('/v6/', { cookie, 'accept-encoding': 'identity', 'if-none-match': etag })).status, 304)
    t.equal(await (await get('/v6/index.html', { cookie })).text(), INDEX, 'by name too')
  })

  t.test("a hashed file of Vite's assets folder is immutable, compressed as accepted", async (t) => {
    const response = await get('/v6/assets/index-AbCd_f12.js', { cookie, 'accept-encoding': 'br' })
    t.equal(response.status, 200)
    t.equal(response.headers.get('cache-control'), 'private, max-age=31536000, immutable')
    t.equal(response.headers.get('content-type'), 'text/javascript; charset=utf-8')
    t.equal(response.headers.get('content-encoding'), 'br')
    t.equal(response.headers.get('x-content-type-options'), 'nosniff')
    t.match(response.headers.get('content-security-policy') ?? '', "default-src 'none'")
    t.ok(Number(response.headers.get('content-length')) < SCRIPT.length, 'smaller as sent')
    t.equal(await response.text(), SCRIPT, 'decoded, the file')
  })

  t.test('a compressed format is sent as it is; a file outside assets/ is revalidated', async (t) => {
    const font = await get('/v6/assets/font-Zz9-yy8x.woff2', { cookie, 'accept-encoding': 'br, gzip' })
    t.equal(font.status, 200)
    t.equal(font.headers.get('content-type'), 'font/woff2')
    t.equal(font.headers.get('content-encoding'), null)
    t.equal(font.headers.get('vary'), null)
    t.equal(Buffer.from(await font.arrayBuffer()).length, 8)
    const icon = await get('/v6/favicon.svg', { cookie })
    t.equal(icon.headers.get('content-type'), 'image/svg+xml')
    t.equal(icon.headers.get('cache-control'), 'no-cache, private')
    t.equal((await get('/v6/link-in.svg', { cookie })).status, 200, 'a link inside the folder is followed')
  })

  t.test('only files of the folder: no way up, no link out, nothing hidden, no folder', async (t) => {
    for (const path of [
      '/v6/../secret.txt',
      '/v6/%2e%2e/secret.txt',
      '/v6/assets/..%2f..%2fsecret.txt',
      '/v6/assets/%2E%2E/%2E%2E/secret.txt',
      '/v6/..%5csecret.txt',
      '/v6/link-out.txt',
      '/v6/folder-out/secret.txt',
      '/v6/.env',
      '/v6/assets',
      '/v6/assets/',
      '/v6/index.html%00.js',
      '/v6/missing.js',
    ]) {
      const response = await raw(server, path, { cookie })
      t.equal(response.status, 404, path)
      t.notMatch(response.body, SECRET, `${path}: nothing of the secret`)
      t.match(JSON.parse(response.body) as unknown, { code: /^NO_SUCH_(OBJECT|ROUTE)$/ }, path)
    }
  })

  t.test('a file rebuilt in place is served anew', async (t) => {
    const first = await get('/v6/favicon.svg', { cookie })
    await first.arrayBuffer()
    writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>')
    const second = await get('/v6/favicon.svg', { cookie })
    t.match(await second.text(), /viewBox/)
    t.not(second.headers.get('etag'), first.headers.get('etag'))
  })

  t.test("XO 6's sign-out link lands on a form: a link alone signs nobody out", async (t) => {
    const { cookie: own } = await signIn(server)
    const page = await get('/signout', { cookie: own })
    t.equal(page.status, 200)
    t.equal(page.headers.get('cache-control'), 'no-cache, private')
    t.match(page.headers.get('content-security-policy') ?? '', "default-src 'none'")
    const html = await page.text()
    t.match(html, /<form class="signin-form" method="post" action="\/signout">/)
    t.notMatch(html, /<script/)
    t.equal(page.headers.get('set-cookie'), null, 'the cookie is kept')
    t.equal((await get('/v6/', { cookie: own })).status, 200, 'still signed in')
    const sent = await server.request('/signout', { method: 'POST', headers: { cookie: own }, auth: null, redirect: 'manual' })
    t.equal(sent.status, 303)
    t.equal(sent.headers.get('location'), '/signin')
    t.equal((await get('/v6/', { cookie: own })).status, 302, 'signed out by the form')
  })
})
