import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'

const REQUEST_ID = 'X-Request-Id'
/** Never changed (not frozen: a frozen array's copy takes V8's slow path, three times the cost): each response's own queue is a copy of it. */
const NO_OUTPUT: readonly unknown[] = []

/**
 * The server's responses. Each carries its request's id, added only as its
 * headers are written: a header set ahead (`setHeader`) sends every answer
 * through node's slower header path (2 µs an answer, measured by answering
 * a fixed body right after it with and without it).
 */
export class KeelResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  // Declared, not initialized: a class field is defined on every response, which showed in the profile.
  declare requestId: string
  /** node's queue of what waits for the socket (not in its types): the head goes there before a Buffer body. */
  declare outputData: unknown[] | undefined

  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    // Every way of answering (end, write, flushHeaders, writeHead) comes through here.
    if (!this.headersSent && !this.hasHeader(REQUEST_ID)) this.setHeader(REQUEST_ID, this.requestId)
    return typeof reasonOrHeaders === 'string' ? super.writeHead(statusCode, reasonOrHeaders, headers) : super.writeHead(statusCode, reasonOrHeaders)
  }

  /** A whole body's head in one object, the request id in it: node's fast path when nothing was set before. */
  writeBodyHead(statusCode: number, contentType: string, contentLength: number): void {
    // node makes every response's queue with one array literal, and V8 decides per literal where its objects
    // start: once uncached listings at 50 connections have kept many of those queues alive for a while, every
    // later queue starts in the old generation. The head queued in it is then kept by the young collections
    // until they move it to the old generation too: about 220 bytes a single read, and full collections
    // after them (bench/RESULTS.md, 2026-11-27, issue 30). A copy of an empty array is built by `slice`,
    // without a literal, so it starts young whatever V8 decided; `Array.of()` does the same at five times
    // the cost, 1,100 instructions a read (bench/RESULTS.md, 2026-11-27 15:00, wip/s39-onevm). A queue that
    // already holds something (a response waiting behind an earlier one on its connection) is kept.
    // Guarded: the field is node's own, not in its types; were it renamed, this does nothing (test/http/response.test.ts fails).
    if (Array.isArray(this.outputData) && this.outputData.length === 0) this.outputData = NO_OUTPUT.slice()
    // Literal keys: a computed one makes V8 build the object the slow way.
    super.writeHead(statusCode, { 'Content-Type': contentType, 'Content-Length': contentLength, 'X-Request-Id': this.requestId })
  }
}
