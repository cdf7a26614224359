import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'

const REQUEST_ID = 'X-Request-Id'

/**
 * The server's responses. Each carries its request's id, added only as its
 * headers are written: a header set ahead (`setHeader`) sends every answer
 * through node's slower header path (2 µs an answer, measured by answering
 * a fixed body right after it with and without it).
 */
export class KeelResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  // Declared, not initialized: a class field is defined on every response, which showed in the profile.
  declare requestId: string

  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    // Every way of answering (end, write, flushHeaders, writeHead) comes through here.
    if (!this.headersSent && !this.hasHeader(REQUEST_ID)) this.setHeader(REQUEST_ID, this.requestId)
    return typeof reasonOrHeaders === 'string' ? super.writeHead(statusCode, reasonOrHeaders, headers) : super.writeHead(statusCode, reasonOrHeaders)
  }

  /**
   * A whole body and its head, the request id in it: one object of headers, node's fast path when nothing was
   * set before, and the head handed to the socket as a text of its own, ahead of the body.
   *
   * `end(body)` alone would queue the head in the response's `outputData`, an array node makes with one
   * literal for every response, and V8 decides per literal where its objects start: once uncached listings
   * at 50 connections have kept many of those queues alive for a while, every later queue starts in the old
   * generation, and the head queued there is kept by the young collections until they move it there too:
   * about 220 bytes a single read, and full collections after them (bench/RESULTS.md, 2026-11-27, issue 30).
   * An empty `write` sends the head as node sends a head with a text body, straight to the socket, and it
   * costs less than the queue did: 1,600 instructions a read less than a queue of Keel's own per response
   * (bench/RESULTS.md, 2026-11-27 14:44–15:25 UTC, wip/s39-onevm). A response waiting behind an earlier one
   * on its connection (pipelining) has no socket yet, and node queues its head and body as it queues any write.
   */
  sendWhole(statusCode: number, contentType: string, body: Buffer): void {
    // Literal keys: a computed one makes V8 build the object the slow way.
    super.writeHead(statusCode, { 'Content-Type': contentType, 'Content-Length': body.length, 'X-Request-Id': this.requestId })
    // Corked, the head waits for the body and both leave in one write; `end` uncorks the socket fully.
    this.socket?.cork()
    this.write('', 'latin1')
    this.end(body)
  }
}
