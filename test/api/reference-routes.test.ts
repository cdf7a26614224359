import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { fixturesDir, packageRoot } from '../../src/paths.js'
import { startServer } from '../helpers/server.js'

/**
 * The reference's REST routes (read from its controllers into
 * ../shared/notes/reference-rest-routes.txt, kept in fixtures/ so that the
 * suite runs where the notes are not) against what Keel serves: each must be
 * declared (the OpenAPI document is made from the router's routes) and routed
 * (no NO_SUCH_ROUTE, no 405, asked with made-up ids).
 */

const LIST = 'reference-rest-routes.txt'

function referenceRoutes(): string[] {
  const text = readFileSync(join(fixturesDir, LIST), 'utf8')
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'))
}

/** A concrete path for a route: every parameter a made-up id, a format the collection exports. */
function concrete(path: string): string {
  const format = /^\/vdi/.test(path) ? 'vhd' : 'xva'
  return '/rest/v0' + path.replace('.{format}', `.${format}`).replace(/\{\w+\}/g, 'no-such-id')
}

/** `GET /vms/{id}.{format}` and Keel's `/rest/v0/vms/{id}.xva` both become `GET /vms/{}.{}`. */
const shape = (method: string, path: string): string =>
  `${method.toUpperCase()} ${path.replace(/^\/rest\/v0/, '').replace(/\{\w+\}/g, '{}').replace(/\{\}\.\w+$/, '{}.{}')}`

const notes = join(packageRoot, '..', 'shared', 'notes', LIST)
t.test('the repository\'s copy of the list is the notes\' own', { skip: existsSync(notes) ? false : 'the shared notes are not beside this checkout' }, async (t) => {
  t.equal(readFileSync(join(fixturesDir, LIST), 'utf8'), readFileSync(notes, 'utf8'))
})

t.test('every route of the reference is served by Keel', async (t) => {
  const routes = referenceRoutes()
  t.equal(routes.length, 271)

  const server = await startServer()
  t.teardown(() => server.close())
  const openApi = (await server.json<{ paths: Record<string, Record<string, unknown>> }>('/rest/v0/docs/swagger.json')).body
  const documented = new Set(Object.entries(openApi.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => shape(method, path))))

  for (const route of routes) {
    const [method = '', path = ''] = route.split(' ')
    // The document lists the routes Keel declares; the catch-all for unknown actions is left out of it.
    const declared = documented.has(shape(method, path))
    t.ok(declared, `${route} is declared, and in the OpenAPI document`)
    const response = await server.request(concrete(path), { method, headers: { 'content-type': 'application/json' } })
    // Only the status and the error code matter: a stream (events) is not read.
    const text = response.headers.get('content-type')?.startsWith('application/json') === true ? await response.text() : ''
    if (text === '') await response.body?.cancel()
    const code = text.startsWith('{') ? (JSON.parse(text) as { code?: unknown }).code : undefined
    t.ok(code !== 'NO_SUCH_ROUTE' && response.status !== 405, `${route} is routed (${response.status} ${String(code ?? '')})`)
  }
})

/** The routes Keel serves beyond the reference's: README's "Beyond the reference's routes" lists them. */
const BEYOND = [
  'GET /',
  'GET /signin',
  'GET /signout',
  'POST /signin',
  'POST /signout',
  'GET /healthz',
  'GET /metrics',
  'GET /rest/v0/docs',
  'GET /rest/v0/docs/swagger.json',
  'PATCH /rest/v0/hosts/{id}',
  'PATCH /rest/v0/pools/{id}',
  'PATCH /rest/v0/srs/{id}',
  'PATCH /rest/v0/networks/{id}',
  'PATCH /rest/v0/servers/{id}',
  'GET /rest/v0/vdi-unmanaged',
  'GET /rest/v0/vdi-unmanaged/{id}',
  'GET /rest/v0/vgpus',
  'GET /rest/v0/vgpus/{id}',
  'GET /rest/v0/gpu-groups',
  'GET /rest/v0/gpu-groups/{id}',
  'GET /rest/v0/vtpms',
  'GET /rest/v0/vtpms/{id}',
  'GET /rest/v0/acl-audit',
  'GET /rest/v0/acl-audit/{id}',
  'POST /rest/v0/acl-check',
  'POST /rest/v0/backup-jobs',
  'PATCH /rest/v0/backup-jobs/{id}',
  'DELETE /rest/v0/backup-jobs/{id}',
  'POST /rest/v0/backup-jobs/{id}/actions/run',
  'POST /rest/v0/schedules',
  'PATCH /rest/v0/schedules/{id}',
  'DELETE /rest/v0/schedules/{id}',
  'DELETE /rest/v0/backup-archives/{id}',
  'POST /rest/v0/backup-archives/{id}/actions/restore',
  'DELETE /rest/v0/users/{id}/authentication_tokens/{identifier}',
]

/** An object's actions and each one's parameters, offered on every collection with actions. */
const DISCOVERY = /^GET \/rest\/v0\/[\w-]+\/\{id\}\/actions(\/\{action\})?$/

/** `shape` of a `METHOD /path` line. */
function routeShape(route: string): string {
  const [method = '', path = ''] = route.split(' ')
  return shape(method, path)
}

t.test('the routes Keel adds to the reference\u2019s are the ones README lists', async (t) => {
  const reference = new Set(referenceRoutes().map(routeShape))
  const server = await startServer()
  t.teardown(() => server.close())
  const openApi = (await server.json<{ paths: Record<string, Record<string, unknown>> }>('/rest/v0/docs/swagger.json')).body
  const added = Object.entries(openApi.paths)
    .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
    .filter((route) => !reference.has(routeShape(route)) && !DISCOVERY.test(route))
  t.same(added.sort(), [...BEYOND].sort())
  const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8')
  for (const route of BEYOND) t.ok(readme.includes(`\`${route.replace(/\{(\w+)\}/g, '<$1>')}\``), `README names ${route}`)
})
