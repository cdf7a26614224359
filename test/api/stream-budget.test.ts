import { connect, type Socket } from 'node:net'
import t from 'tap'
import { demoIds } from '../helpers/demo-lab.js'
import { ADMIN_EMAIL, ADMIN_PASSWORD, basic, jsonBody, startServer, type TestServer } from '../helpers/server.js'
import { openLines } from '../helpers/streams.js'

/** A watch whose client stops reading at once: what it is sent piles up in the kernel, then in the server. */
function stalledWatch(server: TestServer, query: string): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const { port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(`GET /rest/v0/vms?ndjson=true&watch=true&${query} HTTP/1.1\r\nHost: keel\r\nAuthorization: ${basic(ADMIN_EMAIL, ADMIN_PASSWORD)}\r\n\r\n`)
      socket.pause()
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
      const closed = new Promise<void>((done) => socket.once('close', () => done()))
      resolve({ socket, received: () => received, closed })
    })
    socket.once('error', reject)
  })
}

const metric = async (server: TestServer, pattern: RegExp): Promise<number> => {
  const line = pattern.exec(await (await server.request('/metrics')).text())
  return line === null ? 0 : Number(line[1])
}
const cuts = (server: TestServer, reason: string) => metric(server, new RegExp(`^keel_stream_cuts_total\\{reason="${reason}"\\} (\\d+)$`, 'm'))

t.test('past the bound of all streams together, the one holding the most is cut and the others carry on', async (t) => {
  const server = await startServer({ config: { restApi: { maxRamAllocatedForSseClients: 1 } } })
  t.teardown(() => server.close())
  const demo = await demoIds(server)
  const big = await stalledWatch(server, 'fields=*')
  const small = await stalledWatch(server, 'fields=name_label')
  t.teardown(() => {
    big.socket.destroy()
    small.socket.destroy()
  })
  const fast = await openLines(`${server.url}/rest/v0/vms?ndjson=true&watch=true&fields=name_label`, { authorization: basic(ADMIN_EMAIL, ADMIN_PASSWORD) })
  t.teardown(() => fast.close())

  // Whole records of 25 KiB each for the big watch, a name for the others, until the bound is passed.
  let round = 0
  const statuses = new Set<number>()
  while ((await cuts(server, 'total')) === 0) {
    if (++round > 3000) throw new Error('the bound was never passed')
    const tags = Array.from({ length: 100 }, (_, i) => `${round}-${i}-`.padEnd(250, 'x'))
    const patched = await server.request(`/rest/v0/vms/${demo.haltedVm}`, jsonBody({ tags }, 'PATCH'))
    statuses.add(patched.status)
  }
  t.same([...statuses], [204], 'every write answered')
  await server.request(`/rest/v0/vms/${demo.runningVm}`, jsonBody({ nameLabel: 'after-the-cut' }, 'PATCH'))
  while (!JSON.stringify(fast.values).includes('after-the-cut')) await fast.until(fast.values.length + 1)
  t.equal(fast.values.length, round + 1, 'a client that reads gets every change')

  small.socket.resume()
  await new Promise<void>((done) => {
    const check = () => small.received().includes('after-the-cut') && done()
    small.socket.on('data', check)
    check()
  })
  t.pass('the stalled client with little pending was kept')
  big.socket.resume()
  await big.closed
  t.notMatch(big.received(), /after-the-cut/, 'the one holding the most was cut')
  t.equal(await cuts(server, 'total'), 1)
  t.equal(await cuts(server, 'connection'), 0)
  t.ok((await metric(server, /^keel_stream_undelivered_bytes (\d+)$/m)) <= 1024 * 1024, 'what is held is under the bound')
})
