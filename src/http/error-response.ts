import type { ServerResponse } from 'node:http'
import { KeelError } from '../errors.js'

/**
 * The one place where error codes become HTTP statuses. A code missing here
 * is a programming error and answers 500, so the table test pins every code.
 */
export const statusByCode: Readonly<Record<string, number>> = {
  INVALID_JSON: 400,
  BAD_QUERY_PARAMETER: 400,
  FILTER_PARSE_ERROR: 400,
  AMBIGUOUS_CREDENTIALS: 400,
  MALFORMED_AUTHORIZATION: 400,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  NOT_ENOUGH_PRIVILEGES: 403,
  NO_SUCH_OBJECT: 404,
  NO_SUCH_ROUTE: 404,
  METHOD_NOT_ALLOWED: 405,
  OBJECT_ALREADY_EXISTS: 409,
  INCORRECT_STATE: 409,
  ABORTED: 409,
  BODY_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_PARAMETERS: 422,
  INVALID_DISK_STREAM: 422,
  DISK_TOO_LARGE: 422,
  TOO_MANY_ATTEMPTS: 429,
  INTERNAL_ERROR: 500,
  NOT_IMPLEMENTED: 501,
}

export interface ErrorBody {
  error: string
  code: string
  data?: Record<string, unknown>
}

export function errorStatus(error: KeelError): number {
  return statusByCode[error.code] ?? 500
}

/** Only KeelErrors reach clients verbatim; anything else is a 500 whose detail stays in the log. */
export function toErrorResponse(error: unknown, requestId: string): { status: number; body: ErrorBody } {
  if (error instanceof KeelError) {
    const status = errorStatus(error)
    if (status !== 500) {
      const body: ErrorBody = { error: error.message, code: error.code }
      if (error.data !== undefined) body.data = error.data
      return { status, body }
    }
  }
  return {
    status: 500,
    body: { error: 'internal server error', code: 'INTERNAL_ERROR', data: { requestId } },
  }
}

export function sendError(res: ServerResponse, error: unknown, requestId: string): number {
  const { status, body } = toErrorResponse(error, requestId)
  const text = JSON.stringify(body)
  res.statusCode = status
  res.setHeader('Content-Type', 'application/json; charset=utf-8')
  res.setHeader('Content-Length', Buffer.byteLength(text))
  if (status === 401) res.setHeader('WWW-Authenticate', 'Basic realm="keel"')
  res.end(text)
  return status
}
