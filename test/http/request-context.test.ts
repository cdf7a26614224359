import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineRoute, type RouteContext } from '../../src/http/route.js'
import { RequestContext } from '../../src/http/request-context.js'
import { ADMIN_EMAIL, jsonBody, startServer } from '../helpers/server.js'

// Contexts made by an object literal let V8 pretenure every request's context after a spell of
// long listings (src/http/request-context.ts): each route, with or without a body, gets one made
// by the constructor.
const seen: RouteContext[] = []

const answer = (ctx: RouteContext): void => {
  seen.push(ctx)
  ctx.res.writeHead(200, { 'content-type': 'application/json' })
  ctx.res.end(JSON.stringify({ params: ctx.params, query: ctx.query, body: ctx.body ?? null, email: ctx.principal?.email ?? null, requestId: ctx.requestId }))
}

const routes = [
  defineRoute({
    method: 'GET',
    path: '/test/context/:name',
    operationId: 'context-read',
    summary: 'answers what its context holds',
    tags: ['test'],
    access: { authenticated: true },
    params: Type.Object({ name: Type.String() }),
    query: Type.Object({ q: Type.Optional(Type.String()) }),
    responses: {},
    handler: answer,
  }),
  defineRoute({
    method: 'POST',
    path: '/test/context',
    operationId: 'context-write',
    summary: 'answers what its context holds, body included',
    tags: ['test'],
    access: { authenticated: true },
    body: Type.Object({ a: Type.Integer() }),
    bodyRequired: true,
    responses: {},
    handler: answer,
  }),
]

t.test('a handler’s context is made by its constructor, body or not', async (t) => {
  const server = await startServer({ app: { extraRoutes: routes } })
  t.teardown(() => server.close())

  t.test('a read: params, query, caller and request id', async (t) => {
    seen.length = 0
    const { status, body, response } = await server.json('/test/context/first?q=x')
    t.equal(status, 200)
    t.same(body, { params: { name: 'first' }, query: { q: 'x' }, body: null, email: ADMIN_EMAIL, requestId: response.headers.get('x-request-id') })
    t.equal(seen.length, 1)
    t.ok(seen[0] instanceof RequestContext, 'made by the constructor')
  })

  t.test('a write: the checked body in a context of its own', async (t) => {
    seen.length = 0
    const { status, body, response } = await server.json('/test/context', jsonBody({ a: 1 }))
    t.equal(status, 200)
    t.same(body, { params: {}, query: {}, body: { a: 1 }, email: ADMIN_EMAIL, requestId: response.headers.get('x-request-id') })
    t.equal(seen.length, 1)
    t.ok(seen[0] instanceof RequestContext, 'made by the constructor')
  })

  t.test('a bad body is refused before the handler runs', async (t) => {
    seen.length = 0
    const { status, body } = await server.json<{ code: string }>('/test/context', jsonBody({ a: 'one' }))
    t.equal(status, 422)
    t.equal(body.code, 'INVALID_PARAMETERS')
    t.equal(seen.length, 0, 'no handler ran')
  })
})
