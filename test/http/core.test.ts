import t from 'tap'
import { Type } from '@sinclair/typebox'
import { KeelError } from '../../src/errors.js'
import { defineRoute } from '../../src/http/route.js'
import { basic, jsonBody, startServer, ADMIN_EMAIL } from '../helpers/server.js'

const failing = [
  defineRoute({
    method: 'GET',
    path: '/test/crash',
    operationId: 'crash',
    summary: 'throws a plain error',
    tags: ['test'],
    access: { public: true },
    responses: {},
    handler: () => {
      throw new Error('secret internal detail')
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/test/conflict',
    operationId: 'conflict',
    summary: 'throws a coded error',
    tags: ['test'],
    access: { public: true },
    body: Type.Object({ a: Type.Integer() }),
    responses: {},
    handler: () => {
      throw new KeelError('INCORRECT_STATE', 'incorrect state', { actual: 'Running', expected: 'Halted' })
    },
  }),
]

t.test('HTTP layer', async (t) => {
  const server = await startServer({ config: { http: { maxJsonBodySize: 2048 } }, app: { extraRoutes: failing } })
  t.teardown(() => server.close())

  t.test('/rest/v0 and /rest/v0/ redirect to the docs', async (t) => {
    for (const path of ['/rest/v0', '/rest/v0/']) {
      const response = await server.request(path, { auth: null })
      t.equal(response.status, 302, path)
      t.equal(response.headers.get('location'), '/rest/v0/docs')
    }
  })

  t.test('every response carries a request id, and a sane incoming one is kept', async (t) => {
    const response = await server.request('/rest/v0/users')
    t.match(response.headers.get('x-request-id'), /^[0-9a-f-]{36}$/)
    const echoed = await server.request('/rest/v0/users', { headers: { 'x-request-id': 'trace-42' } })
    t.equal(echoed.headers.get('x-request-id'), 'trace-42')
    const hostile = await server.request('/rest/v0/users', { headers: { 'x-request-id': 'a b\tc' } })
    t.not(hostile.headers.get('x-request-id'), 'a b\tc')
  })

  t.test('unknown routes are 404 JSON', async (t) => {
    const { status, body, response } = await server.json('/rest/v0/nope/nothing')
    t.equal(status, 404)
    t.match(response.headers.get('content-type'), /^application\/json/)
    t.same(body, {
      error: 'no such route GET /rest/v0/nope/nothing',
      code: 'NO_SUCH_ROUTE',
      data: { method: 'GET', path: '/rest/v0/nope/nothing' },
    })
  })

  t.test('a known path with another method is 405 with Allow', async (t) => {
    const { status, body, response } = await server.json('/rest/v0/users', { method: 'PUT' })
    t.equal(status, 405)
    t.equal(response.headers.get('allow'), 'GET, POST')
    t.same(body, { error: 'method PUT is not allowed on /rest/v0/users', code: 'METHOD_NOT_ALLOWED', data: { allowed: ['GET', 'POST'] } })
  })

  t.test('401 without credentials, with the Basic challenge', async (t) => {
    const { status, body, response } = await server.json('/rest/v0/users', { auth: null })
    t.equal(status, 401)
    t.equal(response.headers.get('www-authenticate'), 'Basic realm="keel"')
    t.same(body, { error: 'invalid credentials', code: 'INVALID_CREDENTIALS' })
  })

  t.test('401 with a wrong password or an unknown token', async (t) => {
    const wrong = await server.json('/rest/v0/users', { auth: basic(ADMIN_EMAIL, 'wrong') })
    t.equal(wrong.status, 401)
    t.same(wrong.body, { error: 'invalid credentials', code: 'INVALID_CREDENTIALS' })
    const unknownUser = await server.json('/rest/v0/users', { auth: basic('nobody@example.org', 'x') })
    t.equal(unknownUser.status, 401)
    const token = await server.json('/rest/v0/users', { headers: { cookie: 'authenticationToken=not-a-token' } })
    t.equal(token.status, 401)
    t.same(token.body, { error: 'invalid credentials', code: 'INVALID_CREDENTIALS' })
  })

  t.test('400 when both credential forms are sent', async (t) => {
    const { status, body } = await server.json('/rest/v0/users', {
      headers: { cookie: 'authenticationToken=abc', authorization: basic(ADMIN_EMAIL, 'x') },
    })
    t.equal(status, 400)
    t.same(body, {
      error: 'Having multiple authentication methods is not supported, please choose one',
      code: 'AMBIGUOUS_CREDENTIALS',
    })
  })

  t.test('400 for a malformed Authorization header', async (t) => {
    for (const header of ['Basic', 'Basic bm9jb2xvbg==', 'Digest abc']) {
      const { status, body } = await server.json('/rest/v0/users', { headers: { authorization: header } })
      t.equal(status, 400, header)
      t.equal((body as { code: string }).code, 'MALFORMED_AUTHORIZATION', header)
    }
  })

  t.test('400 for malformed JSON, and nothing is created', async (t) => {
    const before = await server.json<string[]>('/rest/v0/users')
    const { status, body } = await server.json('/rest/v0/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email": "x@y.z", ',
    })
    t.equal(status, 400)
    t.equal((body as { code: string }).code, 'INVALID_JSON')
    t.match((body as { error: string }).error, /^malformed JSON body: /)
    t.same((await server.json('/rest/v0/users')).body, before.body)
  })

  t.test('413 for a body over the limit, and nothing is created', async (t) => {
    const before = await server.json<string[]>('/rest/v0/users')
    const big = { email: 'big@example.org', password: 'x'.repeat(4000) }
    const { status, body } = await server.json('/rest/v0/users', jsonBody(big))
    t.equal(status, 413)
    t.same(body, { error: 'request body is larger than 2048 bytes', code: 'BODY_TOO_LARGE', data: { limit: 2048 } })
    // chunked upload: no declared length, the limit applies while reading
    const chunked = await server.json('/rest/v0/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(JSON.stringify(big)))
          controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    t.equal(chunked.status, 413)
    t.same((await server.json('/rest/v0/users')).body, before.body)
  })

  t.test('415 for a JSON route without a JSON content type', async (t) => {
    const { status, body } = await server.json('/rest/v0/users', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"email":"a@b.c","password":"p"}',
    })
    t.equal(status, 415)
    t.same(body, {
      error: 'request body must be sent with Content-Type: application/json',
      code: 'UNSUPPORTED_MEDIA_TYPE',
      data: { contentType: 'text/plain' },
    })
  })

  t.test('a JSON body is read under application/json or application/*+json, whatever the case and parameters', async (t) => {
    for (const type of ['application/json', 'Application/JSON; charset=utf-8', ' application/json ;charset="utf-8"', 'application/vnd.api+json', 'application/merge-patch+json; q=1']) {
      const { status, body } = await server.json('/test/conflict', { method: 'POST', headers: { 'content-type': type }, body: '{"a":1}' })
      t.equal(status, 409, type)
      t.equal((body as { code: string }).code, 'INCORRECT_STATE', `${type}: the handler ran`)
    }
  })

  t.test('415 for any other media type, and nothing is created', async (t) => {
    const before = await server.json<string[]>('/rest/v0/users')
    for (const type of ['text/json', 'application/jsonl', 'application/json-seq', 'application/x+json+xml', 'text/plain+json', 'json', '']) {
      const { status, body } = await server.json('/rest/v0/users', {
        method: 'POST',
        headers: { 'content-type': type },
        body: '{"email":"media@example.org","password":"p"}',
      })
      t.equal(status, 415, type)
      t.same(body, { error: 'request body must be sent with Content-Type: application/json', code: 'UNSUPPORTED_MEDIA_TYPE', data: { contentType: type } }, type)
    }
    t.same((await server.json('/rest/v0/users')).body, before.body)
  })

  t.test('422 lists each failing field', async (t) => {
    const { status, body } = await server.json('/rest/v0/users', jsonBody({ email: 5, permission: 'root', extra: true }))
    t.equal(status, 422)
    const data = (body as { data: { errors: Array<{ path: string; message: string }> } }).data
    t.equal((body as { code: string }).code, 'INVALID_PARAMETERS')
    const paths = data.errors.map((e) => e.path).sort()
    t.ok(paths.includes('body.email'))
    t.ok(paths.includes('body.password'))
    t.ok(paths.includes('body.permission'))
    t.ok(paths.includes('body.extra'))
  })

  t.test('409 from a coded conflict, with its data', async (t) => {
    const { status, body } = await server.json('/test/conflict', jsonBody({ a: 1 }))
    t.equal(status, 409)
    t.same(body, { error: 'incorrect state', code: 'INCORRECT_STATE', data: { actual: 'Running', expected: 'Halted' } })
  })

  t.test('414 for an overlong request target; HEAD answers like GET without a body', async (t) => {
    const { status, body } = await server.json('/rest/v0/users?filter=' + 'a'.repeat(17000))
    t.equal(status, 414)
    t.same(body, { error: 'request target is too long', code: 'URI_TOO_LONG', data: { limit: 16384 } })
    const head = await server.request('/rest/v0/users', { method: 'HEAD' })
    t.equal(head.status, 200)
    t.equal(await head.text(), '')
  })

  t.test('500 never leaks the error; the body names the request id', async (t) => {
    const { status, body, response } = await server.json('/test/crash')
    t.equal(status, 500)
    t.same(body, { error: 'internal server error', code: 'INTERNAL_ERROR', data: { requestId: response.headers.get('x-request-id') } })
    t.notMatch(JSON.stringify(body), /secret internal detail|at /)
  })
})
