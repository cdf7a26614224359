import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { jsonBody, startServer } from '../helpers/server.js'

t.test('a backtracking pattern cannot stall the service', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const renamed = await server.request(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ nameLabel: 'a'.repeat(40) + '!' }, 'PATCH'))
  t.equal(renamed.status, 204)

  // A backtracking engine takes about 2^40 steps on this name: an answer at all is the proof.
  // How long it takes is measured in bench/filter.ts, not bounded here.
  const [hostile, plain] = await Promise.all([
    server.json<string[]>(`/rest/v0/vms?filter=${encodeURIComponent('name_label:/(a+)+$/')}`),
    server.json<string[]>(`/rest/v0/hosts`),
  ])
  t.equal(hostile.status, 200)
  t.same(hostile.body, [], 'no VM name ends in a run of a')
  t.equal(plain.status, 200, 'another request is answered meanwhile')
  const matching = await server.json<string[]>(`/rest/v0/vms?filter=${encodeURIComponent('name_label:/^(a+)+!$/')}`)
  t.same(matching.body, [`/rest/v0/vms/${demo.haltedVm}`])
})

t.test('what the linear-time engine refuses, and filters over the limits, are 400 naming why', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const cases: Array<[filter: string, body: Record<string, unknown>]> = [
    [
      'name_label:/(?=a)b/',
      {
        error: 'parse error: expected a valid regexp at position 11 (invalid perl operator: (?=)',
        code: 'FILTER_PARSE_ERROR',
        data: { stringToParse: 'name_label:/(?=a)b/', position: 11, reason: 'invalid perl operator: (?=' },
      },
    ],
    [
      '/(a)\\1/',
      {
        error: 'parse error: expected a valid regexp at position 0 (invalid escape sequence: \\1)',
        code: 'FILTER_PARSE_ERROR',
        data: { stringToParse: '/(a)\\1/', position: 0, reason: 'invalid escape sequence: \\1' },
      },
    ],
    ['/a/ /b/', { code: 'FILTER_TOO_COMPLEX', data: { limit: 160, actual: 256 } }],
    ['a'.repeat(2049), { code: 'FILTER_TOO_COMPLEX', data: { limit: 2048, actual: 2049 } }],
  ]
  const before = await server.json('/rest/v0/vms?fields=name_label')
  for (const [filter, expected] of cases) {
    const { status, body } = await server.json(`/rest/v0/vms?filter=${encodeURIComponent(filter)}`)
    t.equal(status, 400, filter.slice(0, 30))
    if ('error' in expected) t.same(body, expected)
    else t.match(body, expected)
  }
  t.same((await server.json('/rest/v0/vms?fields=name_label')).body, before.body, 'nothing changed')
})
