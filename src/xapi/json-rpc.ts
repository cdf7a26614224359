import { memoizedStruct, xapiDateTime, XmlRpcDouble, type XmlRpcStruct, type XmlRpcValue } from './xml-rpc.js'

/**
 * JSON-RPC v1 and v2 as XAPI speaks them (xen-api doc wire-protocol.md): the
 * id is required and never null (no notifications), params is an array, a
 * failure is `[code, ...params]` (v1: `error` beside `result: null`; v2:
 * `error: {code: 1, message: code, data: params}`). Values are the XML-RPC
 * model's: doubles become numbers and datetimes XAPI's compact strings.
 */
export type JsonRpcVersion = '1.0' | '2.0'

export interface JsonRpcRequest {
  readonly version: JsonRpcVersion
  readonly method: string
  readonly params: readonly unknown[]
  readonly id: string | number
}

/** `[code, ...params]`, as XAPI's failures travel in every shape. */
export type FailureDescription = readonly [string, ...string[]]

export type JsonRpcResponse = { readonly result: unknown } | { readonly error: FailureDescription }

export class JsonRpcParseError extends Error {
  override readonly name = 'JsonRpcParseError'
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

export function decodeJsonRpcRequest(text: string): JsonRpcRequest {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (error) {
    throw new JsonRpcParseError(`malformed JSON: ${(error as Error).message}`, { cause: error })
  }
  if (!isObject(body)) throw new JsonRpcParseError('a request is a JSON object')
  const { jsonrpc, method, params, id } = body
  if (jsonrpc !== undefined && jsonrpc !== '2.0') throw new JsonRpcParseError('jsonrpc must be "2.0" when present')
  if (typeof method !== 'string' || method === '') throw new JsonRpcParseError('method must be a non-empty string')
  if (!Array.isArray(params)) throw new JsonRpcParseError('params must be an array')
  if (typeof id !== 'string' && !Number.isInteger(id)) throw new JsonRpcParseError('id must be a string or an integer')
  return { version: jsonrpc === undefined ? '1.0' : '2.0', method, params, id: id as string | number }
}

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  // Date's own toJSON has already run when a replacer sees the value: read the original.
  const original = this[key]
  if (original instanceof Date) return xapiDateTime(original)
  if (value instanceof XmlRpcDouble) return value.value
  return value
}

const encodeRecord = memoizedStruct((struct) => JSON.stringify(struct, replacer))

/** JSON.stringify's text, the containers of records written by hand so that each record's text is kept (memoizedStruct). */
function encodeValue(value: XmlRpcValue): string {
  if (Array.isArray(value)) {
    let items = ''
    for (const item of value as XmlRpcValue[]) items += `${items === '' ? '' : ','}${encodeValue(item)}`
    return `[${items}]`
  }
  if (value instanceof Date) return `"${xapiDateTime(value)}"`
  if (value instanceof XmlRpcDouble) return JSON.stringify(value.value)
  if (typeof value !== 'object') return JSON.stringify(value)
  const struct = value as XmlRpcStruct
  if (Object.isFrozen(struct)) return encodeRecord(struct)
  let members = ''
  for (const key of Object.keys(struct)) members += `${members === '' ? '' : ','}${JSON.stringify(key)}:${encodeValue(struct[key] as XmlRpcValue)}`
  return `{${members}}`
}

export function encodeJsonRpcResult(request: Pick<JsonRpcRequest, 'version' | 'id'>, result: XmlRpcValue): string {
  const id = JSON.stringify(request.id)
  return request.version === '2.0' ? `{"jsonrpc":"2.0","result":${encodeValue(result)},"id":${id}}` : `{"result":${encodeValue(result)},"error":null,"id":${id}}`
}

export function encodeJsonRpcFailure(request: Pick<JsonRpcRequest, 'version' | 'id'>, failure: FailureDescription): string {
  const [code, ...params] = failure
  const body =
    request.version === '2.0' ? { jsonrpc: '2.0', error: { code: 1, message: code, data: params }, id: request.id } : { result: null, error: failure, id: request.id }
  return JSON.stringify(body)
}

const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string')

/** A client's reading of either version's response. */
export function decodeJsonRpcResponse(text: string): JsonRpcResponse {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (error) {
    throw new JsonRpcParseError(`malformed JSON: ${(error as Error).message}`, { cause: error })
  }
  return decodeJsonRpcBody(body)
}

/** The same reading, of a response already parsed (a client that parsed its result in parts). */
export function decodeJsonRpcBody(body: unknown): JsonRpcResponse {
  if (!isObject(body)) throw new JsonRpcParseError('a response is a JSON object')
  const { error } = body
  if (error === undefined || error === null) {
    if (!('result' in body)) throw new JsonRpcParseError('a response has a result or an error')
    return { result: body['result'] }
  }
  if (isStrings(error) && error[0] !== undefined) return { error: [error[0], ...error.slice(1)] }
  if (isObject(error) && typeof error['message'] === 'string' && isStrings(error['data'] ?? [])) {
    return { error: [error['message'], ...((error['data'] as string[] | undefined) ?? [])] }
  }
  throw new JsonRpcParseError('an error is [code, ...params] (v1) or {code, message, data} (v2)')
}
