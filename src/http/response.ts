import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'
import type { GroupCommit } from '../store/group-commit.js'
import { sendError } from './error-response.js'

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
  /** the store's group commit, which a whole answer waits for (src/store/group-commit.ts); unset in servers without a store */
  declare durable: GroupCommit | undefined

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
    // Literal keys: a computed one makes V8 build the object the slow way.
    super.writeHead(statusCode, { 'Content-Type': contentType, 'Content-Length': contentLength, 'X-Request-Id': this.requestId })
  }

  /**
   * An answer ended while the store has commits not yet on disk is finished
   * once a sync covers them: the one place where "success" waits for
   * durability, whichever handler wrote. A failed sync turns it into a 500, or
   * a cut connection once its head is out (single reads write it first, and a
   * streamed body's head and first bytes go as they come: only its end waits).
   */
  override end(callback?: () => void): this
  override end(chunk: unknown, callback?: () => void): this
  override end(chunk: unknown, encoding: BufferEncoding, callback?: () => void): this
  override end(chunk?: unknown, encoding?: BufferEncoding | (() => void), callback?: () => void): this {
    const durable = this.durable?.wait()
    if (durable === undefined) return typeof encoding === 'string' ? super.end(chunk, encoding, callback) : super.end(chunk, encoding ?? callback)
    durable.then(
      () => {
        if (this.destroyed) return
        if (typeof encoding === 'string') super.end(chunk, encoding, callback)
        else super.end(chunk, encoding ?? callback)
      },
      (error: unknown) => refuse(this, error),
    )
    return this
  }
}

// A function rather than a private method: a method's brand is one more thing every response would carry.
function refuse(res: KeelResponse, error: unknown): void {
  if (res.destroyed) return
  if (res.headersSent) {
    res.destroy(error instanceof Error ? error : undefined)
    return
  }
  res.durable = undefined
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  sendError(res, error, res.requestId)
}
