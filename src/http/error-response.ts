import type { ServerResponse } from 'node:http'
import { errorStatus, type ErrorCode } from '../error-codes.js'
import { KeelError } from '../errors.js'

export interface ErrorBody {
  error: string
  code: ErrorCode
  data?: Record<string, unknown>
  info?: string
}

/** The reference's `info` on a XapiError's answer: the one 500 whose detail reaches the client, since it is the pool's, not Keel's. */
export const XAPI_ERROR_INFO = 'This is a XenServer/XCP-ng error, not an XO error'

/** Only KeelErrors reach clients verbatim; anything else is a 500 whose detail stays in the log. */
export function toErrorResponse(error: unknown, requestId: string): { status: number; body: ErrorBody } {
  if (error instanceof KeelError) {
    const status: number = errorStatus[error.code]
    if (status !== 500 || error.code === 'XAPI_ERROR') {
      const body: ErrorBody = { error: error.message, code: error.code }
      if (error.data !== undefined) body.data = error.data
      if (error.code === 'XAPI_ERROR') body.info = XAPI_ERROR_INFO
      return { status, body }
    }
  }
  return {
    status: 500,
    body: { error: 'internal server error', code: 'INTERNAL_ERROR', data: { requestId } },
  }
}

/** Writes the error answer and returns its status. */
export function sendError(res: ServerResponse, error: unknown, requestId: string): number {
  const { status, body } = toErrorResponse(error, requestId)
  const text = JSON.stringify(body)
  res.statusCode = status
  res.setHeader('Content-Type', 'application/json; charset=utf-8')
  res.setHeader('Content-Length', Buffer.byteLength(text))
  // A browser answers a Basic challenge with a password prompt over the console: a request that
  // came with the console's cookie is told 401 alone.
  if (status === 401 && !/(?:^|;)\s*authenticationToken=/.test(res.req?.headers.cookie ?? '')) res.setHeader('WWW-Authenticate', 'Basic realm="keel"')
  res.end(text)
  return status
}
