import t from 'tap'
import { once } from 'node:events'
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sendLent } from '../../src/simulator/lent-body.js'

const MiB = 1024 * 1024

/** Chunks without end: only the response going away stops the body. */
async function* endless(): AsyncGenerator<Buffer> {
  for (;;) yield Buffer.alloc(MiB)
}

t.test('a response destroyed while the body waits for drain (task.cancel) ends the body with an error instead of hanging', async (t) => {
  let outcome!: (value: unknown) => void
  const ended = new Promise((resolve) => (outcome = resolve))
  const server = createServer((_request, response: ServerResponse) => {
    response.writeHead(200)
    const write = response.write.bind(response)
    // Destroyed at the first full buffer, while sendLent awaits its drain: the state a cancel found in one full-suite run.
    response.write = ((chunk: Buffer, callback: (error?: Error | null) => void) => {
      const room = write(chunk, callback)
      if (!room) setImmediate(() => response.destroy())
      return room
    }) as ServerResponse['write']
    sendLent(response, endless()).then(() => outcome('ended'), outcome)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const request = get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  request.on('error', () => {})
  const [response] = (await once(request, 'response')) as [IncomingMessage]
  response.on('error', () => {})
  response.pause()
  t.match(await ended, /the client went away/)
  request.destroy()
})
