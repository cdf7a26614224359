import { request as httpRequest, type Agent, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { Duplex } from 'node:stream'
import { XapiTransportError } from './transport.js'
import { XapiError, type XapiHttpRequest } from './types.js'

const MAX_REDIRECTS = 3

/** How long a host of a transfer may stay silent, in ms (0: no limit). */
export interface TransferTimeouts {
  /** from the request to its answer's status line and headers */
  readonly response: number
  /** once answered, with no byte moving either way; generous, since a slow reader holds the transfer back too */
  readonly idle: number
}

/**
 * One request. A host that takes the connection and never answers, or stops
 * in the middle of a body, fails it as a host that resets it would
 * (XapiTransportError, `timedOut`), the socket closed so that the host
 * drops its side: a silent host would otherwise hold the transfer, and the
 * REST request behind it, for ever. A keep-alive socket the host closed as
 * it was reused (its idle timeout, which a process busy past it has not seen
 * fire) is sent on again, as a call is (transport.ts), while its body has
 * not begun to flow: the host read nothing of it (issue 28: a pool's stats
 * answered 500 under load, its hosts' `/rrd_updates` reset so).
 */
function once(url: URL, agent: Agent, request: XapiHttpRequest, timeouts: TransferTimeouts): Promise<IncomingMessage> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const headers = request.length === undefined ? {} : { 'content-length': String(request.length) }
    const req = send(url, { method: request.method, agent, headers, ...(request.signal === undefined ? {} : { signal: request.signal }) })
    let response: IncomingMessage | undefined
    const silent = (error: XapiTransportError): void => {
      response?.destroy(error)
      req.destroy(error)
    }
    const unanswered = timeouts.response > 0 ? setTimeout(() => silent(new XapiTransportError(`${url.host}: no answer to ${url.pathname} within ${timeouts.response} ms`, { timedOut: true })), timeouts.response) : undefined
    req.once('close', () => clearTimeout(unanswered))
    if (timeouts.idle > 0) req.setTimeout(timeouts.idle, () => silent(new XapiTransportError(`${url.host}: ${url.pathname} moved no byte for ${timeouts.idle} ms`, { timedOut: true })))
    req.once('error', (error: NodeJS.ErrnoException) => {
      if (req.reusedSocket && response === undefined && request.signal?.aborted !== true && (error.code === 'ECONNRESET' || error.code === 'EPIPE') && request.body?.readableDidRead !== true) {
        request.body?.unpipe(req)
        resolve(once(url, agent, request, timeouts))
        return
      }
      reject(request.signal?.aborted === true || error instanceof XapiTransportError ? error : new XapiTransportError(`${url.host}: ${error.message}`, { cause: error }))
    })
    req.once('response', (answer: IncomingMessage) => {
      clearTimeout(unanswered)
      response = answer
      resolve(answer)
    })
    if (request.body === undefined) req.end()
    else request.body.pipe(req)
  })
}

/**
 * A request to an HTTP handler (`/export_raw_vdi`, `/import`, ...), the
 * session in the query, redirects to another host of the pool followed with
 * the query carried over. A body already sent cannot be sent again: a
 * redirect answered after the body started to flow is refused.
 */
export async function handlerRequest(origin: URL, agent: Agent, session: string, request: XapiHttpRequest, timeouts: TransferTimeouts): Promise<IncomingMessage> {
  let url = new URL(request.path, origin)
  for (const [key, value] of Object.entries(request.query)) url.searchParams.set(key, value)
  url.searchParams.set('session_id', session)
  for (let hop = 0; ; hop++) {
    const response = await once(url, agent, request, timeouts)
    const status = response.statusCode ?? 0
    if (status >= 200 && status < 300) return response
    response.resume()
    const location = response.headers.location
    if ((status === 302 || status === 307) && location !== undefined && hop < MAX_REDIRECTS && request.body?.readableDidRead !== true) {
      url = new URL(location, url)
      continue
    }
    throw new XapiError('HTTP_HANDLER_FAILED', [request.path, String(status)])
  }
}

/**
 * A raw connection through a CONNECT handler (a console's `location`):
 * XAPI answers `200 OK` and a blank line, then the connection carries the
 * handler's own bytes both ways. Node hands over the socket whatever the
 * status; another status is a refusal (401 for the session, 500 for a VM not
 * running there), its page discarded.
 */
export function openTunnel(url: URL, agent: Agent, timeout: number): Promise<Duplex> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'CONNECT', agent, timeout })
    req.once('timeout', () => req.destroy(new XapiTransportError(`${url.host}: no answer within ${timeout} ms`, { timedOut: true })))
    req.once('error', (error) => reject(error instanceof XapiTransportError ? error : new XapiTransportError(`${url.host}: ${error.message}`, { cause: error })))
    req.once('connect', (response: IncomingMessage, socket: Duplex, head: Buffer) => {
      const status = response.statusCode ?? 0
      if (status !== 200) {
        socket.destroy()
        reject(new XapiError('HTTP_HANDLER_FAILED', [url.pathname, String(status)]))
        return
      }
      if (head.length > 0) socket.unshift(head)
      resolve(socket)
    })
    req.end()
  })
}
