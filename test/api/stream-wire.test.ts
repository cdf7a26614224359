import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { decodeChunked, rawConnection, type RawConnection } from '../helpers/raw-http.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'

// Stream frames are framed as HTTP chunks once per audience and written to every connection as they are:
// these tests read the bytes on the wire.

const authorization = basic(ADMIN_EMAIL, ADMIN_PASSWORD)
const get = (path: string, version = '1.1', headers = ''): string =>
  `GET ${path} HTTP/${version}\r\nHost: keel\r\nAuthorization: ${authorization}\r\n${headers}\r\n`
const rename = (server: TestServer, vm: string, name: string) =>
  server.request(`/rest/v0/vms/${vm}`, jsonBody({ nameLabel: name }, 'PATCH'))

/** The event frames decoded so far, each chunk checked against its size line. */
const frames = (connection: RawConnection): string[] => decodeChunked(connection.raw()).chunks

async function openEvents(server: TestServer, headers = ''): Promise<{ connection: RawConnection; id: string }> {
  const connection = await rawConnection(server.url, get('/rest/v0/events', '1.1', headers))
  await connection.until(() => frames(connection).length > 0)
  const id = /"id":"([0-9a-f-]{36})"/.exec(frames(connection)[0] as string)?.[1] as string
  const subscribed = await server.request(`/rest/v0/events/${id}/subscriptions`, jsonBody({ collection: 'VM', fields: ['name_label'] }))
  if (subscribed.status !== 201) throw new Error(`subscription: ${subscribed.status}`)
  return { connection, id }
}

t.test('connections of one audience get the same frames, each with its event id, and resume from it', async (t) => {
  const server = await startServer({ config: { restApi: { eventResumeWindow: 60_000 } } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const one = await openEvents(server)
  const two = await openEvents(server)
  t.teardown(() => {
    one.connection.socket.destroy()
    two.connection.socket.destroy()
  })
  await rename(server, demo.haltedVm, 'wire-1')
  await rename(server, demo.runningVm, 'wire-2')
  const updates = async (connection: RawConnection): Promise<string[]> => {
    await connection.until(() => frames(connection).some((frame) => frame.includes('wire-2')))
    return frames(connection).filter((frame) => frame.includes('event: update'))
  }
  const [ofOne, ofTwo] = [await updates(one.connection), await updates(two.connection)]
  t.match(decodeChunked(one.connection.raw()).head, /\r\ntransfer-encoding: chunked/i)
  t.equal(ofOne.length, 2, 'one chunk a change')
  t.match(ofOne[0], /^id: (\d+)\nevent: update\ndata: \{"\$subscription":"VM","name_label":"wire-1"\}\n\n$/)
  t.match(ofOne[1], /^id: (\d+)\nevent: update\ndata: \{"\$subscription":"VM","name_label":"wire-2"\}\n\n$/)
  t.same(ofTwo, ofOne, 'the same bytes, ids included, on both connections')
  const [firstId, secondId] = ofOne.map((frame) => Number(/^id: (\d+)/.exec(frame)?.[1]))
  t.ok((secondId as number) > (firstId as number), 'ids grow with the changes')

  const resumed = await openEvents(server, `Last-Event-ID: ${firstId}\r\n`)
  t.teardown(() => resumed.connection.socket.destroy())
  await resumed.connection.until(() => frames(resumed.connection).some((frame) => frame.includes('wire-2')))
  t.same(
    frames(resumed.connection).filter((frame) => frame.includes('event: update')),
    [ofOne[1]],
    'resuming from the first id replays the second change with its own id',
  )
})

t.test('an HTTP/1.0 client gets the lines unframed, up to the end of the connection', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const watch = await rawConnection(server.url, get('/rest/v0/vms?ndjson=true&watch=true&fields=name_label', '1.0'))
  t.teardown(() => watch.socket.destroy())
  await watch.until((raw) => raw.includes('\r\n\r\n'))
  await rename(server, demo.haltedVm, 'old-client-1')
  await rename(server, demo.haltedVm, 'old-client-2')
  const raw = await watch.until((raw) => raw.includes('old-client-2"') && raw.endsWith('\n'))
  const [head, body] = raw.split('\r\n\r\n') as [string, string]
  t.match(head, /^HTTP\/1\.1 200 OK\r\n/)
  t.notMatch(head, /transfer-encoding/i)
  t.same(
    body.trimEnd().split('\n').map((line) => JSON.parse(line) as unknown),
    [
      ['update', { name_label: 'old-client-1', href: `/rest/v0/vms/${demo.haltedVm}` }],
      ['update', { name_label: 'old-client-2', href: `/rest/v0/vms/${demo.haltedVm}` }],
    ],
  )
})

/** What follows the first response on a connection, once that response is complete. */
function afterFirst(raw: string): string | undefined {
  const headEnd = raw.indexOf('\r\n\r\n')
  if (headEnd === -1) return undefined
  const length = /\r\ncontent-length: (\d+)/i.exec(raw.slice(0, headEnd))?.[1]
  if (length !== undefined) return raw.length >= headEnd + 4 + Number(length) ? raw.slice(headEnd + 4 + Number(length)) : undefined
  const first = decodeChunked(raw)
  return first.ended ? first.rest : undefined
}

t.test('a watch pipelined behind another request starts once that one is answered', async (t) => {
  const server = await startServer()
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const connection = await rawConnection(
    server.url,
    get(`/rest/v0/vms/${demo.haltedVm}?fields=name_label`) + get('/rest/v0/vms?ndjson=true&watch=true&fields=name_label&since=5'),
  )
  t.teardown(() => connection.socket.destroy())
  // The resync line is queued before the watch's response has the connection, and arrives with no later change.
  await connection.until((raw) => decodeChunked(afterFirst(raw) ?? '').chunks.length > 0)
  t.match(connection.raw(), /^HTTP\/1\.1 200 OK\r\n/)
  await rename(server, demo.haltedVm, 'behind')
  await connection.until((raw) => decodeChunked(afterFirst(raw) ?? '').chunks.length > 1)
  const watch = decodeChunked(afterFirst(connection.raw()) ?? '')
  t.match(watch.head, /^HTTP\/1\.1 200 OK\r\n/)
  t.match(watch.head, /\r\ncontent-type: application\/x-ndjson/i)
  const lines = watch.chunks.map((chunk) => JSON.parse(chunk) as unknown[])
  t.same(lines[0]?.slice(0, 2), ['resync', null])
  t.same(lines[1]?.slice(0, 2), ['update', { name_label: 'behind', href: `/rest/v0/vms/${demo.haltedVm}` }])
  t.equal(lines.length, 2)
})

t.test('HEAD on the event stream answers its headers and never a byte of body', async (t) => {
  const server = await startServer({ config: { restApi: { ssePingInterval: 50 } } })
  t.teardown(() => server.close())
  const head = await rawConnection(server.url, `HEAD /rest/v0/events HTTP/1.1\r\nHost: keel\r\nAuthorization: ${authorization}\r\n\r\n`)
  t.teardown(() => head.socket.destroy())
  const headers = await head.until((raw) => raw.includes('\r\n\r\n'))
  t.match(headers, /^HTTP\/1\.1 200 OK\r\n/)
  t.match(headers, /\r\ncontent-type: text\/event-stream/i)
  // Pings go to every stream in turn: two reaching a later one mean the HEAD stream was passed twice.
  const later = await rawConnection(server.url, get('/rest/v0/events'))
  t.teardown(() => later.socket.destroy())
  await later.until(() => frames(later).filter((frame) => frame.startsWith('event: ping')).length >= 2)
  t.equal(head.raw(), headers, 'nothing after the headers')
})
