import { Agent } from 'node:http'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { jsonRpc, XapiTransportError } from '../../src/driver/xapi/transport.js'

/**
 * A host speaking just enough HTTP: each request read is counted, and
 * `answer(n, k)` (the request's number on the whole, and on its connection)
 * says whether it gets a JSON-RPC answer or a reset of its connection.
 */
async function host(t: Test, answer: (request: number, onConnection: number) => boolean): Promise<{ url: URL; requests: () => number }> {
  let requests = 0
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    let onConnection = 0
    socket.on('data', (data) => {
      for (let at = data.indexOf('POST /jsonrpc'); at !== -1; at = data.indexOf('POST /jsonrpc', at + 1)) {
        requests++
        onConnection++
        if (!answer(requests, onConnection)) {
          socket.resetAndDestroy()
          return
        }
        const body = JSON.stringify({ jsonrpc: '2.0', result: `answer ${requests}`, id: 1 })
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), requests: () => requests }
}

t.test('a keep-alive socket the host closed as it was reused: the call is sent again once, on a new socket', async (t) => {
  // The second request on a connection finds it reset, as after the host's idle timeout.
  const { url, requests } = await host(t, (_request, onConnection) => onConnection === 1)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const target = { origin: url, agent }
  t.equal(await jsonRpc(target, 'pool.get_all', [], { timeout: 5_000 }), 'answer 1')
  t.equal(await jsonRpc(target, 'pool.get_all', [], { timeout: 5_000 }), 'answer 3', 'the reset request was sent again and answered')
  t.equal(requests(), 3)
})

t.test('a reset on a new socket is the host\'s failure, and the call is sent once', async (t) => {
  const { url, requests } = await host(t, () => false)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  await t.rejects(jsonRpc({ origin: url, agent }, 'pool.get_all', [], { timeout: 5_000 }), XapiTransportError)
  t.equal(requests(), 1)
})

t.test('a reused socket reset twice: sent again once only, then the failure', async (t) => {
  const { url, requests } = await host(t, (request) => request === 1)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const target = { origin: url, agent }
  t.equal(await jsonRpc(target, 'pool.get_all', [], { timeout: 5_000 }), 'answer 1')
  await t.rejects(jsonRpc(target, 'pool.get_all', [], { timeout: 5_000 }), XapiTransportError)
  t.equal(requests(), 3)
})

t.test('every idle socket closed by the host at once: the call is sent again on each, then answered on a new socket', async (t) => {
  // A burst of three calls leaves three idle sockets; the host then resets any second request on a connection.
  const { url, requests } = await host(t, (_request, onConnection) => onConnection === 1)
  const agent = new Agent({ keepAlive: true, maxSockets: 3 })
  t.teardown(() => agent.destroy())
  const target = { origin: url, agent }
  const burst = await Promise.all([1, 2, 3].map(() => jsonRpc(target, 'pool.get_all', [], { timeout: 5_000 })))
  t.same(burst.toSorted(), ['answer 1', 'answer 2', 'answer 3'])
  t.equal(await jsonRpc(target, 'pool.get_all', [], { timeout: 5_000 }), 'answer 7', 'each idle socket tried once, then a new one')
  t.equal(requests(), 7)
})
