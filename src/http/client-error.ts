import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { KeelError } from '../errors.js'
import { toErrorResponse } from './error-response.js'
import { nextRequestId } from './request-id.js'

const SPACE = 0x20
const TAB = 0x09
const CR = 0x0d
const LF = 0x0a
const COLON = 0x3a

/**
 * Where node:http's header limit was crossed, read from the packet it was
 * parsing (`rawPacket`) and the parser's position in it (`bytesParsed`).
 * node:http counts the request target with the headers against one limit and
 * says only "header overflow"; watching each connection's bytes to tell the
 * two apart would take the parser off its native path for every request
 * after. In the packet: a line end before the position means the request
 * line was over; a span that stopped at a space was the target (a target has
 * no spaces), one that stopped just past a colon or at a line end was a
 * header. A span cut by the packet's end is a header when it holds a space or
 * tab. What remains, a run of bytes without spaces that began in an earlier
 * packet, is taken for the target: the long ones seen in practice are filters
 * listing many ids.
 */
export function overflowedIn(packet: Buffer | undefined, position: number | undefined): 'target' | 'headers' {
  if (packet === undefined || position === undefined || position < 0 || position > packet.length) return 'headers'
  const before = packet.subarray(0, position)
  if (before.includes(LF)) return 'headers'
  // A header name's span ends just past its colon.
  if (position > 0 && packet[position - 1] === COLON) return 'headers'
  const stop = packet[position]
  if (stop === SPACE) return 'target'
  if (stop === CR || stop === LF) return 'headers'
  const space = before.indexOf(SPACE)
  // The request's own start: a method and the space before its target.
  if (space !== -1 && /^[A-Z]+$/.test(before.subarray(0, space).toString('latin1')) && before.indexOf(SPACE, space + 1) === -1) return 'target'
  return space === -1 && !before.includes(TAB) ? 'target' : 'headers'
}

/** node:http's parse errors carry the packet being parsed and how far the parser got in it. */
export interface ParserError extends NodeJS.ErrnoException {
  readonly rawPacket?: Buffer
  readonly bytesParsed?: number
}

/** What node:http refused before routing, as the same coded error every other refusal is. */
export function clientErrorOf(error: ParserError, limits: { maxHeaderSize: number }): KeelError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return overflowedIn(error.rawPacket, error.bytesParsed) === 'headers'
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
export function answerClientError(error: ParserError, socket: Duplex, log: Logger, limits: { maxHeaderSize: number }): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const requestId = nextRequestId()
  const { status, body } = toErrorResponse(clientErrorOf(error, limits), requestId)
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
