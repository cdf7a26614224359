import type { FailureDescription } from './json-rpc.js'
import { encodeMethodResponse, XmlRpcDouble, type XmlRpcStruct, type XmlRpcValue } from './xml-rpc.js'

/**
 * XAPI's XML-RPC answers are never faults: every call answers a struct with
 * `Status` `Success` and a `Value`, or `Failure` and an `ErrorDescription`
 * array whose first string is the code (xen-api doc wire-protocol.md, Errors).
 */
export function encodeXmlRpcSuccess(value: XmlRpcValue): string {
  return encodeMethodResponse({ Status: 'Success', Value: value })
}

export function encodeXmlRpcFailure(failure: FailureDescription): string {
  return encodeMethodResponse({ Status: 'Failure', ErrorDescription: [...failure] })
}

export type XapiOutcome = { readonly value: XmlRpcValue } | { readonly error: FailureDescription }

const isStruct = (value: XmlRpcValue): value is XmlRpcStruct =>
  typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) && !(value instanceof XmlRpcDouble)

/** A client's reading of a decoded response value: undefined when it is not a Status struct. */
export function xapiOutcome(value: XmlRpcValue): XapiOutcome | undefined {
  if (!isStruct(value)) return undefined
  if (value['Status'] === 'Success' && 'Value' in value) return { value: value['Value'] as XmlRpcValue }
  const description = value['ErrorDescription']
  if (value['Status'] !== 'Failure' || !Array.isArray(description)) return undefined
  const strings = description.map(String)
  const [code] = strings
  return code === undefined ? undefined : { error: [code, ...strings.slice(1)] }
}
