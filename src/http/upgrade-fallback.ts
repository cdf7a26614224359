import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { KeelResponse } from './response.js'

/**
 * Answers an upgrade request that no upgrade route takes as the plain request
 * it also is. Once a server listens for upgrades, node hands it every request
 * with an `Upgrade` header (curl's `--http2` over http asks for `h2c` on any
 * request), and the client may not insist on the new protocol: it gets the
 * HTTP/1.1 answer, and the connection closes after it.
 */
export function answerAsRequest(server: Server, req: IncomingMessage, socket: Duplex): void {
  const res = new KeelResponse(req)
  res.assignSocket(socket as Socket)
  res.shouldKeepAlive = false
  res.on('finish', () => {
    res.detachSocket(socket as Socket)
    socket.end()
  })
  // node stopped parsing at the headers: a body would never arrive, so the request ends there.
  req.push(null)
  server.emit('request', req, res)
}
