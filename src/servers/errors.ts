import { XapiError } from '../driver/xapi/types.js'
import { isKeelError, KeelError } from '../errors.js'
import type { ServerError } from './store.js'

/** Failures after which retrying is pointless or harmful: the entry waits until it changes or is connected by hand. */
const PERMANENT = new Set(['SESSION_AUTHENTICATION_FAILED', 'POOL_ALREADY_CONNECTED', 'CERTIFICATE_CHANGED', 'XAPI_DRIVER_REQUIRED', 'SERVER_CREDENTIALS_UNREADABLE'])

export const isPermanent = (error: ServerError): boolean => error.code !== undefined && PERMANENT.has(error.code)

/**
 * A failure as the entry's `error` shows it: the reference stores the error's
 * own fields (name, message, code, and a XAPI error's parameters), never a stack.
 */
export function describeFailure(error: unknown): ServerError {
  if (error instanceof XapiError) {
    if (error.code === 'POOL_ALREADY_CONNECTED') {
      return { name: 'PoolAlreadyConnected', code: error.code, message: 'this pool is already connected', params: error.params }
    }
    return { name: 'XapiError', code: error.code, params: error.params, message: error.message }
  }
  if (isKeelError(error)) return { name: error.name, code: error.code, message: error.message }
  if (error instanceof Error) {
    const code = (error as Error & { code?: unknown }).code
    return { name: error.name, message: error.message, ...(typeof code === 'string' ? { code } : {}) }
  }
  return { name: 'Error', message: String(error) }
}

/** What a client that waited for a connection (`sync=true`) is answered. */
export function connectionRefusal(failure: ServerError, serverId: string): KeelError {
  if (failure.code === 'POOL_ALREADY_CONNECTED') {
    return new KeelError('POOL_ALREADY_CONNECTED', 'this pool is already connected through another server entry', {
      serverId,
      ...(failure.params === undefined ? {} : { params: failure.params }),
    })
  }
  if (failure.code === 'CERTIFICATE_CHANGED') return new KeelError('CERTIFICATE_CHANGED', failure.message, { serverId })
  if (failure.code === 'XAPI_DRIVER_REQUIRED') return new KeelError('XAPI_DRIVER_REQUIRED', failure.message, { serverId })
  if (failure.code === 'SERVER_CREDENTIALS_UNREADABLE') return new KeelError('SERVER_CREDENTIALS_UNREADABLE', failure.message, { serverId })
  return new KeelError('SERVER_CONNECTION_FAILED', `could not connect: ${failure.message}`, { serverId, error: failure })
}

export const certificateChanged = (host: string, pinned: string, presented: string | undefined): KeelError =>
  new KeelError(
    'CERTIFICATE_CHANGED',
    `the certificate of ${host} changed since it was pinned (pinned ${pinned}, presented ${presented ?? 'none'}): ` +
      'if the change is expected, clear the pin with PATCH {"fingerprint": null}',
    { host, pinned, ...(presented === undefined ? {} : { presented }) },
  )
