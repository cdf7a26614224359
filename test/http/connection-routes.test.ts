import t from 'tap'
import { Type } from '@sinclair/typebox'
import { Router } from '../../src/http/router.js'
import { ConnectionRoutes } from '../../src/http/connection-routes.js'
import { defineRoute, type HttpMethod } from '../../src/http/route.js'

const route = (method: HttpMethod, path: string) =>
  defineRoute({ method, path, summary: path, tags: [], operationId: `${method} ${path}`, access: { public: true }, responses: {}, params: Type.Object({ id: Type.String() }), handler: () => {} })

function router(): Router {
  const made = new Router()
  for (const def of [route('GET', '/vms'), route('GET', '/vms/:id'), route('GET', '/vms/:id.xva'), route('PUT', '/vdis/:id.raw'), route('GET', '/vdis/:id')]) made.add(def)
  return made
}

t.test('a line sent again leads where the router led it, however many times', (t) => {
  const plain = router()
  const routes = new ConnectionRoutes(plain)
  const table: Array<[string, string]> = [
    ['GET', '/vms/0f0e0d0c-1234-5678-9abc-def012345678'],
    ['GET', '/vms/0f0e0d0c-1234-5678-9abc-def012345678?fields=name_label&limit=2'],
    ['HEAD', '/vms/0f0e0d0c-1234-5678-9abc-def012345678'],
    ['GET', '/vms/0f0e0d0c-1234-5678-9abc-def012345678.xva?compress=zstd'],
    ['PUT', '/vdis/0f0e0d0c-1234-5678-9abc-def012345678.raw'],
    ['GET', '/vdis/with%2Edot-and-more-than-thirteen.raw'],
    ['GET', '/vms/%C3%A9t%C3%A9-%F0%9F%98%80-and-more-than-thirteen/'],
    ['GET', '/vms?filter=power_state:Running'],
    ['GET', '/nowhere/at/all'],
    ['POST', '/vms/abc'],
  ]
  for (const [method, target] of table) {
    const connection = {}
    const queryStart = target.indexOf('?')
    const path = queryStart === -1 ? target : target.slice(0, queryStart)
    const expected = plain.find(method, path)
    for (let time = 1; time <= 3; time++) {
      const routed = routes.route(connection, method, target)
      const label = `${method} ${target}, time ${time}`
      t.equal(routed.path, path, `${label}: path`)
      t.equal(routed.queryText, queryStart === -1 ? '' : target.slice(queryStart + 1), `${label}: query`)
      t.equal(routed.match?.route, expected?.route, `${label}: route`)
      t.same(routed.match?.params, expected?.params, `${label}: parameters`)
    }
  }
  t.end()
})

t.test('each connection keeps its own last line, and only a line that led somewhere', (t) => {
  const routes = new ConnectionRoutes(router())
  const one = {}
  const other = {}
  routes.route(one, 'GET', '/vms/a-long-enough-identifier')
  const first = routes.route(one, 'GET', '/vms/a-long-enough-identifier')
  t.equal(routes.route(one, 'GET', '/vms/a-long-enough-identifier'), first, 'the same line: the same answer, not routed again')
  t.not(routes.route(other, 'GET', '/vms/a-long-enough-identifier').match, first.match, 'another connection routes it itself')
  t.not(routes.route(one, 'HEAD', '/vms/a-long-enough-identifier').match, first.match, 'another method is routed anew')
  const second = routes.route(one, 'GET', '/vms/another-long-identifier')
  t.equal(second.match?.params['id'], 'another-long-identifier')
  t.equal(routes.route(one, 'GET', '/nowhere').match, undefined)
  t.equal(routes.route(one, 'GET', '/vms/another-long-identifier').match?.route, second.match?.route, 'a line that led nowhere is not kept in place of the last')
  t.end()
})

t.test("a repeated line's match is shared, frozen: no request can change what the next one receives", (t) => {
  const routes = new ConnectionRoutes(router())
  const connection = {}
  const once = routes.route(connection, 'GET', '/vms/a-long-enough-identifier')
  const shared = routes.route(connection, 'GET', '/vms/a-long-enough-identifier')
  t.equal(routes.route(connection, 'GET', '/vms/a-long-enough-identifier').match, shared.match, 'later requests share one match')
  t.not(shared.match, once.match, 'the first request keeps a match of its own')
  const params = shared.match?.params as Record<string, string>
  t.ok(Object.isFrozen(shared.match) && Object.isFrozen(params))
  t.throws(() => {
    params['id'] = 'another'
  }, TypeError)
  t.throws(() => {
    params['extra'] = 'added'
  }, TypeError)
  t.same(routes.route(connection, 'GET', '/vms/a-long-enough-identifier').match?.params, { id: 'a-long-enough-identifier' })
  t.end()
})
