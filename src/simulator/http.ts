import type { IncomingMessage, ServerResponse } from 'node:http'
import { decodeJsonRpcRequest, encodeJsonRpcFailure, encodeJsonRpcResult, JsonRpcParseError } from '../xapi/json-rpc.js'
import { encodeXmlRpcFailure, encodeXmlRpcSuccess } from '../xapi/xml-rpc-status.js'
import { decodeMethodCall, XmlRpcParseError } from '../xapi/xml-rpc.js'
import type { Dispatcher } from './calls.js'

/** A call body larger than this is refused with 413 before it is read further. */
export const DEFAULT_MAX_BODY = 4 * 1024 * 1024

class BodyTooLarge extends Error {}

function readBody(request: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length'])
    if (declared > limit) {
      reject(new BodyTooLarge())
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    request.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        request.removeAllListeners('data')
        reject(new BodyTooLarge())
        return
      }
      chunks.push(chunk)
    })
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/**
 * What XAPI answers a request it cannot parse: HTTP 500 with a small HTML
 * page, and the connection closed (xen-api doc wire-protocol.md, Errors).
 */
function internalError(response: ServerResponse, status: number, detail: string): void {
  const escaped = detail.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
  const body = `<html><body><h1>HTTP ${status} internal server error</h1>An unexpected error occurred; please wait a while and try again. If the problem persists, please contact your support representative.<h1> Additional information </h1>${escaped}</body></html>`
  response.writeHead(status, { 'content-type': 'text/html', connection: 'close', 'cache-control': 'no-cache, no-store', 'content-length': Buffer.byteLength(body) })
  response.end(body)
}

function send(response: ServerResponse, type: string, body: string): void {
  // Encoded once: a large pool's get_all_records is tens of MB, not worth measuring and then encoding.
  const bytes = Buffer.from(body)
  response.writeHead(200, { 'content-type': type, 'content-length': bytes.length })
  response.end(bytes)
}

/** The RPC endpoints: XML-RPC at POST / (and /RPC2), JSON-RPC v1 and v2 at POST /jsonrpc; `other` may take a request first (the disk handlers). */
export function rpcListener(
  dispatcher: Pick<Dispatcher, 'call'>,
  maxBody: number = DEFAULT_MAX_BODY,
  other: (request: IncomingMessage, response: ServerResponse) => boolean = () => false,
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    if (other(request, response)) return
    const path = (request.url ?? '/').split('?')[0]
    const xml = path === '/' || path === '/RPC2'
    if (request.method !== 'POST' || (!xml && path !== '/jsonrpc')) {
      request.resume()
      internalError(response, 404, `no handler for ${request.method ?? ''} ${path ?? ''}`)
      return
    }
    readBody(request, maxBody)
      .then(async (body) => {
        if (xml) {
          const call = decodeMethodCall(body)
          const outcome = await dispatcher.call(call.method, call.params)
          send(response, 'text/xml', 'value' in outcome ? encodeXmlRpcSuccess(outcome.value) : encodeXmlRpcFailure(outcome.failure))
          return
        }
        const call = decodeJsonRpcRequest(body)
        const outcome = await dispatcher.call(call.method, call.params)
        send(response, 'application/json', 'value' in outcome ? encodeJsonRpcResult(call, outcome.value) : encodeJsonRpcFailure(call, outcome.failure))
      })
      .catch((error: unknown) => {
        if (error instanceof BodyTooLarge) {
          // The rest of the body is not read: the socket goes once the answer is out.
          response.on('finish', () => request.destroy())
          internalError(response, 413, `request body larger than ${maxBody} bytes`)
        } else if (error instanceof XmlRpcParseError) internalError(response, 500, `Xmlrpc.Parse_error(${error.message})`)
        else if (error instanceof JsonRpcParseError) internalError(response, 500, `Jsonrpc.Malformed_method_request(${error.message})`)
        else internalError(response, 500, 'internal error')
      })
  }
}
