import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { KeelError } from '../errors.js'
import { toErrorResponse } from './error-response.js'

// Connections whose first request line has ended. node:http counts the request line with the
// headers against one limit; a connection still in its first line when that limit is hit was
// sent an overlong request target. Watching stops at the first line end, so requests pay nothing.
const lineEnded = new WeakSet<Duplex>()

export function watchRequestLine(socket: Duplex): void {
  const onData = (chunk: Buffer): void => {
    if (chunk.includes(0x0a)) {
      socket.off('data', onData)
      lineEnded.add(socket)
    }
  }
  socket.on('data', onData)
}

/** What node:http refused before routing, as the same coded error every other refusal is. */
export function clientErrorOf(error: NodeJS.ErrnoException, socket: Duplex, limits: { maxHeaderSize: number }): KeelError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return lineEnded.has(socket)
        ? new KeelError('HEADERS_TOO_LARGE', 'request headers are too large', { limit: limits.maxHeaderSize })
        : new KeelError('URI_TOO_LONG', 'request target is too long', { limit: limits.maxHeaderSize })
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new KeelError('REQUEST_TIMEOUT', 'the request was not received in time')
    default:
      return new KeelError('MALFORMED_REQUEST', 'malformed HTTP request', { reason: error.code ?? 'unknown' })
  }
}

/**
 * Answers a refusal node:http made before any request object existed (its
 * `clientError` event) with the usual JSON error body, then closes: the rest
 * of what the client sent cannot be trusted to start a new request.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, log: Logger, limits: { maxHeaderSize: number }): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const requestId = randomUUID()
  const { status, body } = toErrorResponse(clientErrorOf(error, socket, limits), requestId)
  const text = JSON.stringify(body)
  log.info({ reqId: requestId, status, code: error.code }, 'refused before routing')
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(text)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      text,
  )
}
