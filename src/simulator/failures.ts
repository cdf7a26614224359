import type { FailureDescription } from '../xapi/json-rpc.js'

/**
 * A XAPI failure: what every call answers instead of a value when it fails,
 * `[code, ...params]` in all three wire shapes. Codes and parameters are
 * XAPI's own (ocaml/idl/datamodel_errors.ml), so clients branch on them as
 * they do against a real pool.
 */
export class XapiFailure extends Error {
  override readonly name = 'XapiFailure'
  readonly description: FailureDescription

  constructor(code: string, ...params: string[]) {
    super(params.length === 0 ? code : `${code} ${params.join(' ')}`)
    this.description = [code, ...params]
  }

  get code(): string {
    return this.description[0]
  }
}

export const handleInvalid = (cls: string, ref: string): XapiFailure => new XapiFailure('HANDLE_INVALID', cls, ref)
export const uuidInvalid = (cls: string, uuid: string): XapiFailure => new XapiFailure('UUID_INVALID', cls, uuid)
export const sessionInvalid = (ref: string): XapiFailure => new XapiFailure('SESSION_INVALID', ref)
export const methodUnknown = (method: string): XapiFailure => new XapiFailure('MESSAGE_METHOD_UNKNOWN', method)
export const parameterCountMismatch = (method: string, expected: number, received: number): XapiFailure =>
  new XapiFailure('MESSAGE_PARAMETER_COUNT_MISMATCH', method, String(expected), String(received))
export const fieldTypeError = (field: string): XapiFailure => new XapiFailure('FIELD_TYPE_ERROR', field)
export const invalidValue = (field: string, value: string): XapiFailure => new XapiFailure('INVALID_VALUE', field, value)
export const operationNotAllowed = (reason: string): XapiFailure => new XapiFailure('OPERATION_NOT_ALLOWED', reason)
/** `expected` and `actual` in lower case, as XAPI writes power states in this error. */
export const vmBadPowerState = (vm: string, expected: string, actual: string): XapiFailure =>
  new XapiFailure('VM_BAD_POWER_STATE', vm, expected.toLowerCase(), actual.toLowerCase())
