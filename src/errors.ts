import type { ErrorCode } from './error-codes.js'

/**
 * Every error Keel raises on purpose is a KeelError with a stable string `code`.
 * Clients branch on `code`; the HTTP status of each code is in one table
 * (src/error-codes.ts), so modules below HTTP never pick statuses.
 */
export class KeelError extends Error {
  readonly code: ErrorCode
  readonly data: Record<string, unknown> | undefined

  constructor(code: ErrorCode, message: string, data?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'KeelError'
    this.code = code
    this.data = data
  }
}

export function isKeelError(error: unknown): error is KeelError {
  return error instanceof KeelError
}

export const noSuchObject = (id: string, type: string): KeelError =>
  new KeelError('NO_SUCH_OBJECT', `no such ${type} ${id}`, { id, type })

export const forbidden = (message = 'not enough permissions', data?: Record<string, unknown>): KeelError =>
  new KeelError('FORBIDDEN', message, data)

export const invalidParameters = (errors: Array<{ path: string; message: string }>): KeelError =>
  new KeelError(
    'INVALID_PARAMETERS',
    `invalid parameters: ${errors.map((e) => `${e.path || '(body)'} ${e.message}`).join(', ')}`,
    { errors },
  )

export const badQuery = (parameter: string, message: string): KeelError =>
  new KeelError('BAD_QUERY_PARAMETER', `invalid query parameter ${parameter}: ${message}`, { parameter })

export const alreadyExists = (type: string, field: string, value: string): KeelError =>
  new KeelError('OBJECT_ALREADY_EXISTS', `${type} with ${field} ${value} already exists`, { type, field, value })

export const incorrectState = (data: { actual: unknown; expected: unknown; object?: string; property?: string }): KeelError =>
  new KeelError('INCORRECT_STATE', 'incorrect state', data)

export const aborted = (reason?: string): KeelError =>
  new KeelError('ABORTED', reason === undefined ? 'the operation was aborted' : `the operation was aborted: ${reason}`)
