import { aborted, incorrectState, KeelError, noSuchObject } from '../../errors.js'
import type { XoRecord } from '../types.js'
import { XapiError } from './types.js'

/** XAPI writes power states in lower case; Keel's records, as the reference's, capitalise them. */
const powerState = (state: string | undefined): string => (state === undefined || state === '' ? '' : `${state[0]?.toUpperCase() ?? ''}${state.slice(1)}`)

/** The object acted on, when the caller knows it: its id names it in the answer instead of a ref. */
export interface ErrorSubject {
  readonly object?: XoRecord
}

/** XAPI's answer to a method the host does not have; kept as `data.code`, as a XAPI_ERROR keeps its code. */
const METHOD_UNKNOWN = 'MESSAGE_METHOD_UNKNOWN'

type Translation = (params: readonly string[], subject: ErrorSubject) => KeelError

const missing: Translation = ([cls = '', handle = ''], { object }) =>
  object === undefined ? noSuchObject(handle, cls) : noSuchObject(object.id, object.type)

const state =
  (property: string, actual: unknown, expected: unknown): Translation =>
  (_params, { object }) =>
    incorrectState({ actual, expected, property, ...(object === undefined ? {} : { object: object.id }) })

/**
 * The XAPI failures Keel answers with its own codes, as the lab answers the
 * same refusals (shared notes on xapi §1.3). Every other failure is a
 * XAPI_ERROR (500, as the reference answers a XapiError), code and
 * parameters kept in `data` so that a client can still tell them apart.
 */
const translations: Readonly<Record<string, Translation>> = {
  HANDLE_INVALID: missing,
  UUID_INVALID: missing,
  VM_BAD_POWER_STATE: ([vm = '', expected, actual], { object }) =>
    incorrectState({ actual: powerState(actual), expected: powerState(expected), object: object?.id ?? vm, property: 'power_state' }),
  VM_IS_TEMPLATE: state('is_a_template', true, false),
  OTHER_OPERATION_IN_PROGRESS: ([, , operation = ''], subject) => state('current_operations', operation, '')([], subject),
  VDI_IN_USE: state('attached', true, false),
  // Refs of the plugged VIFs, or of the PIFs: the network's counts say it in Keel's terms.
  NETWORK_CONTAINS_VIF: (params, subject) => state('VIFs attached', params.length, 0)(params, subject),
  NETWORK_CONTAINS_PIF: (params, subject) => state('PIFs', params.length, 0)(params, subject),
  DEVICE_ALREADY_ATTACHED: state('attached', true, false),
  DEVICE_ALREADY_DETACHED: state('attached', false, true),
  TASK_CANCELLED: () => aborted(),
  // A host without the method (an older release): the reference's notImplemented, 501, rather than a pool failure.
  [METHOD_UNKNOWN]: (params) =>
    new KeelError('NOT_IMPLEMENTED', `this pool does not offer ${params[0] ?? 'the method'} (an older XAPI?)`, { code: METHOD_UNKNOWN, params: [...params] }),
}

/** A XAPI failure as Keel answers it; anything that is not a XapiError passes unchanged. */
export function keelErrorOf(error: unknown, subject: ErrorSubject = {}): unknown {
  if (!(error instanceof XapiError)) return error
  const translate = Object.hasOwn(translations, error.code) ? translations[error.code] : undefined
  if (translate !== undefined) return translate(error.params, subject)
  return new KeelError('XAPI_ERROR', error.message, { code: error.code, params: [...error.params] }, { cause: error })
}

/** Runs a XAPI exchange, its failure answered as Keel's. */
export async function translated<T>(subject: ErrorSubject, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw keelErrorOf(error, subject)
  }
}
