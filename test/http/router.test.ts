import t from 'tap'
import { Type } from '@sinclair/typebox'
import { Router } from '../../src/http/router.js'
import { defineRoute, type HttpMethod } from '../../src/http/route.js'

const route = (method: HttpMethod, path: string) =>
  defineRoute({ method, path, summary: path, tags: [], operationId: `${method} ${path}`, access: { public: true }, responses: {}, params: Type.Object({ id: Type.String() }), handler: () => {} })

t.test('routes ending in :param.extension beside a plain :param route', (t) => {
  const router = new Router()
  for (const def of [route('GET', '/vms/:id'), route('GET', '/vms/:id.xva'), route('GET', '/vdis/:id.vhd'), route('GET', '/vdis/:id.raw'), route('PUT', '/vdis/:id.raw'), route('GET', '/vdis/:id')]) {
    router.add(def)
  }
  const table: Array<[string, string, string | undefined, string | undefined]> = [
    ['GET', '/vms/abc', '/vms/:id', 'abc'],
    ['GET', '/vms/abc.xva', '/vms/:id.xva', 'abc'],
    ['HEAD', '/vms/abc.xva', '/vms/:id.xva', 'abc'],
    ['GET', '/vms/a.b.xva', '/vms/:id.xva', 'a.b'],
    ['GET', '/vms/abc.vhd', '/vms/:id', 'abc.vhd'],
    ['GET', '/vms/abc.xva/', '/vms/:id.xva', 'abc'],
    ['GET', '/vms/.xva', '/vms/:id', '.xva'],
    ['GET', '/vdis/abc.vhd', '/vdis/:id.vhd', 'abc'],
    ['GET', '/vdis/abc.raw', '/vdis/:id.raw', 'abc'],
    ['PUT', '/vdis/abc.raw', '/vdis/:id.raw', 'abc'],
    ['PUT', '/vdis/abc.vhd', undefined, undefined],
    ['PUT', '/vdis/abc', undefined, undefined],
    // An encoded dot belongs to the id.
    ['GET', '/vdis/abc%2Eraw', '/vdis/:id', 'abc.raw'],
  ]
  for (const [method, path, expected, id] of table) {
    const match = router.find(method, path)
    t.equal(match?.route.def.path, expected, `${method} ${path}`)
    t.equal(match?.params['id'], id, `${method} ${path}: id`)
  }
  t.same(router.allowedMethods('/vdis/abc.raw'), ['GET', 'PUT'])
  t.same(router.allowedMethods('/vdis/abc.vhd'), ['GET'])
  t.throws(() => router.add(route('GET', '/vms/:id.xva')), 'a route defined twice stops the start')
  t.end()
})
