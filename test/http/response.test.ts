import t from 'tap'
import { Type } from '@sinclair/typebox'
import { JSON_TYPE, sendJsonBytes } from '../../src/http/reply.js'
import { KeelResponse } from '../../src/http/response.js'
import { defineRoute } from '../../src/http/route.js'
import { rawConnection } from '../helpers/raw-http.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, startServer } from '../helpers/server.js'

// A whole body's head goes straight to the socket, never through the queue node made with the response,
// which V8 may have made old (src/http/response.ts): node replaces that queue once it has flushed it.
type Queued = KeelResponse & { outputData?: unknown[] }
const queues: Array<{ made: unknown[] | undefined; after: unknown[] | undefined; held: number | undefined }> = []

const bodyOf = (name: string): Buffer => Buffer.from(JSON.stringify({ name, padding: 'p'.repeat(200) }))

const routes = [
  defineRoute({
    method: 'GET',
    path: '/test/whole/:name',
    operationId: 'whole-body',
    summary: 'answers a whole body through sendWhole',
    tags: ['test'],
    access: { authenticated: true },
    params: Type.Object({ name: Type.String() }),
    responses: {},
    handler: ({ res, params }) => {
      if (!(res instanceof KeelResponse)) throw new Error('not a KeelResponse')
      const made = (res as Queued).outputData
      sendJsonBytes(res, 200, bodyOf(params.name))
      queues.push({ made, after: (res as Queued).outputData, held: made?.length })
    },
  }),
]

t.test('a whole body answered with sendWhole', async (t) => {
  const server = await startServer({ app: { extraRoutes: routes } })
  t.teardown(() => server.close())

  t.test('its head goes to the socket without passing through the response queue', async (t) => {
    queues.length = 0
    const response = await server.request('/test/whole/first')
    t.equal(response.status, 200)
    t.equal(response.headers.get('content-type'), JSON_TYPE)
    t.equal(response.headers.get('content-length'), String(bodyOf('first').length))
    t.match(response.headers.get('x-request-id'), /^[\w.-]+$/)
    t.same(Buffer.from(await response.arrayBuffer()), bodyOf('first'))
    t.equal(queues.length, 1)
    t.ok(Array.isArray(queues[0]?.made), 'node still makes the queue (the check below means something)')
    t.equal(queues[0]?.after, queues[0]?.made, 'the queue was never flushed: nothing went through it')
    t.equal(queues[0]?.held, 0)
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

  t.test('HEAD gets the head alone, and the connection then answers a GET whole', async (t) => {
    const auth = basic(ADMIN_EMAIL, ADMIN_PASSWORD)
    const request = (method: string, name: string, last: boolean): string =>
      `${method} /test/whole/${name} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`
    const connection = await rawConnection(server.url, request('HEAD', 'h', false))
    // The HEAD's answer is whole once its head is: a body sent after it would be read as the next answer's start.
    await connection.until((raw) => raw.includes('\r\n\r\n'))
    connection.socket.write(request('GET', 'g', true))
    await connection.closed
    const parts = connection.raw().split('HTTP/1.1 ').slice(1)
    t.equal(parts.length, 2)
    const [headOnly = '', afterHead = ''] = (parts[0] ?? '').split('\r\n\r\n')
    t.match(headOnly, /^200 OK\r\n/)
    t.match(headOnly.toLowerCase(), `content-length: ${bodyOf('h').length}`)
    t.match(headOnly.toLowerCase(), /x-request-id: [\w.-]+/)
    t.equal(afterHead, '', 'no body after the head')
    const [head = '', body = ''] = (parts[1] ?? '').split('\r\n\r\n')
    t.match(head, /^200 OK\r\n/)
    t.equal(body, bodyOf('g').toString('latin1'))
  })
})
