import { request as httpRequest, type Agent, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { decodeJsonRpcResponse, JsonRpcParseError, type JsonRpcResponse } from '../../xapi/json-rpc.js'
import { ResultMembers, type MemberReader } from './result-members.js'
import { XapiError } from './types.js'

/**
 * A failure below XAPI: the host did not answer (refused, reset, timed out)
 * or answered something that is not a XAPI answer (XAPI's HTML 500 to a
 * malformed request). Only these lead to probing other hosts for the master;
 * a XapiError never does.
 */
export class XapiTransportError extends Error {
  /** the host took the request and said nothing in time: the call may have run */
  readonly timedOut: boolean

  constructor(message: string, options?: { cause?: unknown; timedOut?: boolean }) {
    super(message, options)
    this.name = 'XapiTransportError'
    this.timedOut = options?.timedOut ?? false
  }
}

export const isTransportError = (error: unknown): error is XapiTransportError => error instanceof XapiTransportError

export interface RpcTarget {
  /** `https://host:port` of the host asked */
  readonly origin: URL
  readonly agent: Agent
}

export interface RpcOptions {
  readonly timeout: number
  readonly signal?: AbortSignal | undefined
  /** an object result read member by member, each as this keeps it (result-members.ts) */
  readonly member?: MemberReader | undefined
}

const abortError = (signal: AbortSignal): Error => (signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError'))

/**
 * Sends a request, its body given whole; the response's status checked by the caller. A keep-alive
 * socket the host closed just as it was reused (its idle timeout) fails with a reset before any
 * answer: the host read nothing of it, and it is sent again, not taken for a host that stopped
 * answering (which fails over and fetches the whole pool again). Again on whatever socket comes
 * next: the host closes all the sockets a burst of calls left idle at once, and a process that was
 * busy past that timeout has not seen them close, so the next may be closed too (issue 28: each
 * full fetch, taking longer than the idle timeout under CPU pressure, ended in a failover and
 * another full fetch). Each failed socket is destroyed, so the resends end with the idle sockets
 * the agent holds; a reset on a new socket is the host's failure.
 */
function send(target: RpcTarget, method: string, path: string, body: string | undefined, headers: Record<string, string>, options: RpcOptions): Promise<IncomingMessage> {
  const { signal } = options
  if (signal?.aborted === true) return Promise.reject(abortError(signal))
  const request = target.origin.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, target.origin), { method, agent: target.agent, headers, timeout: options.timeout })
    const onAbort = (): void => {
      req.destroy(abortError(signal as AbortSignal))
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    req.once('close', () => signal?.removeEventListener('abort', onAbort))
    req.once('timeout', () => req.destroy(new XapiTransportError(`${target.origin.host}: no answer within ${options.timeout} ms`, { timedOut: true })))
    req.once('error', (error: NodeJS.ErrnoException) => {
      if (req.reusedSocket && signal?.aborted !== true && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
        resolve(send(target, method, path, body, headers, options))
        return
      }
      reject(signal?.aborted === true || error instanceof XapiTransportError || error instanceof XapiError ? error : new XapiTransportError(`${target.origin.host}: ${error.message}`, { cause: error }))
    })
    req.once('response', resolve)
    req.end(body)
  })
}

async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of response) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** The reply, parsed as it arrives when its members are read one by one. */
async function readReply(response: IncomingMessage, member: MemberReader | undefined): Promise<() => JsonRpcResponse> {
  if (member === undefined || response.statusCode !== 200) {
    const text = await readText(response)
    return () => decodeJsonRpcResponse(text)
  }
  const members = new ResultMembers(member)
  for await (const chunk of response) members.write(chunk as Buffer)
  return () => members.end()
}

let nextId = 0

/** One JSON-RPC v2 call: its result, or a XapiError {code, params}, or a XapiTransportError. */
export async function jsonRpc(target: RpcTarget, method: string, params: readonly unknown[], options: RpcOptions): Promise<unknown> {
  const body = JSON.stringify({ jsonrpc: '2.0', method, params, id: ++nextId })
  const response = await send(target, 'POST', '/jsonrpc', body, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }, options)
  let decode: () => JsonRpcResponse
  try {
    decode = await readReply(response, options.member)
  } catch (error) {
    if (options.signal?.aborted === true) throw error
    if (error instanceof JsonRpcParseError) throw new XapiTransportError(`${target.origin.host}: ${method}: ${error.message}`, { cause: error })
    throw new XapiTransportError(`${target.origin.host}: the answer to ${method} was cut: ${(error as Error).message}`, { cause: error })
  }
  if (response.statusCode !== 200) throw new XapiTransportError(`${target.origin.host}: ${method} answered HTTP ${response.statusCode ?? '?'}`)
  let decoded
  try {
    decoded = decode()
  } catch (error) {
    if (error instanceof JsonRpcParseError) throw new XapiTransportError(`${target.origin.host}: ${method}: ${error.message}`, { cause: error })
    throw error
  }
  if ('error' in decoded) {
    const [code, ...rest] = decoded.error
    throw new XapiError(code, rest)
  }
  return decoded.result
}
