import t from 'tap'
import { Type } from '@sinclair/typebox'
import { JSON_TYPE, sendJsonBytes } from '../../src/http/reply.js'
import { KeelResponse } from '../../src/http/response.js'
import { defineRoute } from '../../src/http/route.js'
import { rawConnection } from '../helpers/raw-http.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, startServer } from '../helpers/server.js'

// A whole body's head waits in a queue of the response's own, not in the one node made with the
// response, which V8 may have made old (src/http/response.ts).
const queues: Array<{ made: unknown[] | undefined; used: unknown[] | undefined }> = []

const bodyOf = (name: string): Buffer => Buffer.from(JSON.stringify({ name, padding: 'p'.repeat(200) }))

const routes = [
  defineRoute({
    method: 'GET',
    path: '/test/whole/:name',
    operationId: 'whole-body',
    summary: 'answers a whole body through writeBodyHead',
    tags: ['test'],
    access: { authenticated: true },
    params: Type.Object({ name: Type.String() }),
    responses: {},
    handler: ({ res, params }) => {
      if (!(res instanceof KeelResponse)) throw new Error('not a KeelResponse')
      const made = res.outputData
      const end = res.end.bind(res)
      // What the head is queued in, seen as the body is handed over.
      res.end = ((...args: Parameters<typeof res.end>) => {
        queues.push({ made, used: res.outputData })
        return end(...args)
      }) as typeof res.end
      sendJsonBytes(res, 200, bodyOf(params.name))
    },
  }),
]

t.test('a whole body answered with writeBodyHead', async (t) => {
  const server = await startServer({ app: { extraRoutes: routes } })
  t.teardown(() => server.close())

  t.test('its head waits in a queue the response made itself', async (t) => {
    queues.length = 0
    const response = await server.request('/test/whole/first')
    t.equal(response.status, 200)
    t.equal(response.headers.get('content-type'), JSON_TYPE)
    t.same(Buffer.from(await response.arrayBuffer()), bodyOf('first'))
    t.equal(queues.length, 1)
    t.not(queues[0]?.used, queues[0]?.made, 'not the queue node made with the response')
    t.ok(Array.isArray(queues[0]?.used))
  })

  t.test('pipelined on one connection, each answer whole and in order', async (t) => {
    queues.length = 0
    const auth = basic(ADMIN_EMAIL, ADMIN_PASSWORD)
    const request = (name: string, last: boolean): string =>
      `GET /test/whole/${name} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`
    const connection = await rawConnection(server.url, request('a', false) + request('b', false) + request('c', true))
    await connection.closed
    const answers = connection.raw()
    const parts = answers.split('HTTP/1.1 ').slice(1)
    t.equal(parts.length, 3)
    parts.forEach((part, i) => {
      const [head = '', body = ''] = part.split('\r\n\r\n')
      const name = ['a', 'b', 'c'][i] ?? ''
      t.match(head, /^200 OK\r\n/, `answer ${name}`)
      t.match(head.toLowerCase(), `content-length: ${bodyOf(name).length}`)
      t.equal(body, bodyOf(name).toString('latin1'), `body ${name}`)
    })
    t.equal(queues.length, 3)
  })
})
