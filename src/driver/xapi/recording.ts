/**
 * The lines of a XAPI recording (issue 28): one JSON object per line, in the
 * order the answers arrived. `call` is an answered call, `event-batch` an
 * answered `event.from`, `error` a call that failed: a XAPI error as
 * `[code, ...params]`, anything below XAPI as `{transport: message}`.
 */
export type RecordedLine = RecordedAnswer | RecordedError

interface Recorded {
  /** when the call was sent, ISO 8601 */
  readonly t: string
  /** `Class.message`, or `GET /path` for an HTTP handler */
  readonly method: string
  readonly params: readonly unknown[]
  /** how long the answer took */
  readonly ms: number
}

export interface RecordedAnswer extends Recorded {
  readonly kind: 'call' | 'event-batch'
  readonly result: unknown
}

export interface RecordedError extends Recorded {
  readonly kind: 'error'
  readonly error: readonly string[] | { readonly transport: string }
}

/** What a session ref becomes in a recording. */
export const SCRUBBED_SESSION = '<session>'
/** What a password becomes in a recording. */
export const SCRUBBED_PASSWORD = '<password>'

export const LOGIN = 'session.login_with_password'

const KINDS = new Set(['call', 'event-batch', 'error'])
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** One line of a recording, checked; undefined when it is not one. */
export function parseRecordedLine(text: string): RecordedLine | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isObject(value) || typeof value['kind'] !== 'string' || !KINDS.has(value['kind'])) return undefined
  if (typeof value['t'] !== 'string' || typeof value['method'] !== 'string' || !Array.isArray(value['params']) || typeof value['ms'] !== 'number') return undefined
  const base = { t: value['t'], method: value['method'], params: value['params'] as unknown[], ms: value['ms'] }
  if (value['kind'] === 'error') {
    const error = value['error']
    if (Array.isArray(error) && error.every((item): item is string => typeof item === 'string')) return { ...base, kind: 'error', error }
    if (isObject(error) && typeof error['transport'] === 'string') return { ...base, kind: 'error', error: { transport: error['transport'] } }
    return undefined
  }
  if (!('result' in value)) return undefined
  return { ...base, kind: value['kind'] === 'call' ? 'call' : 'event-batch', result: value['result'] }
}
