import { DOMParser, onErrorStopParsing, type Element } from '@xmldom/xmldom'

/**
 * XML-RPC as XAPI speaks it (shared notes on xapi §1.1, and on XVA's ova.xml):
 * 64-bit integers travel as bare strings, so a JS number encodes as one;
 * doubles must be marked explicitly (XmlRpcDouble) because XAPI types them
 * apart; datetimes use XAPI's compact form `20240101T13:20:11Z`. Decoding gives
 * integers and datetimes back as strings: only the receiver knows the field's
 * type.
 */
export type XmlRpcValue = string | number | boolean | Date | XmlRpcDouble | XmlRpcValue[] | XmlRpcStruct

export interface XmlRpcStruct {
  readonly [key: string]: XmlRpcValue
}

export class XmlRpcDouble {
  constructor(readonly value: number) {}
}

/** A request or response that is not well-formed XML-RPC. */
export class XmlRpcParseError extends Error {
  override readonly name = 'XmlRpcParseError'
}

export interface XmlRpcCall {
  readonly method: string
  readonly params: readonly XmlRpcValue[]
}

export type XmlRpcResponse = { readonly value: XmlRpcValue } | { readonly fault: { readonly code: number; readonly message: string } }

/** `20240101T13:20:11Z`: ISO 8601 without separators in the date nor milliseconds, as XAPI writes it. */
export function xapiDateTime(date: Date): string {
  return date.toISOString().replace(/-|\.\d+/g, '')
}

const escapes: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' }
const special = /[&<>]/
// Most strings need no escape: testing first spares the replace's copy.
const escapeText = (text: string): string => (special.test(text) ? text.replace(/[&<>]/g, (c) => escapes[c] ?? c) : text)

/**
 * Frozen structs never change (the simulator's records are frozen and replaced
 * on change), so their text is kept: a get_all_records of a large pool encodes
 * only the records that changed since the last one.
 */
export function memoizedStruct(encode: (struct: XmlRpcStruct) => string): (struct: XmlRpcStruct) => string {
  const texts = new WeakMap<XmlRpcStruct, string>()
  return (struct) => {
    if (!Object.isFrozen(struct)) return encode(struct)
    let text = texts.get(struct)
    if (text === undefined) texts.set(struct, (text = encode(struct)))
    return text
  }
}

const encodeStruct = memoizedStruct((struct) => {
  const keys = Object.keys(struct)
  if (keys.length === 0) return '<value><struct/></value>'
  let members = '<value><struct>'
  for (const key of keys) members += `<member><name>${escapeText(key)}</name>${encodeValue(struct[key] as XmlRpcValue)}</member>`
  return members + '</struct></value>'
})

function encodeValue(value: XmlRpcValue): string {
  // Plain strings go untyped (`<value>x</value>`), as XAPI and XO write them.
  if (typeof value === 'string') return `<value>${escapeText(value)}</value>`
  if (typeof value === 'number') return `<value>${Math.trunc(value)}</value>`
  if (typeof value === 'boolean') return `<value><boolean>${value ? 1 : 0}</boolean></value>`
  if (value instanceof XmlRpcDouble) return `<value><double>${value.value}</double></value>`
  if (value instanceof Date) return `<value><dateTime.iso8601>${xapiDateTime(value)}</dateTime.iso8601></value>`
  // Empty containers self-closed, as XVA files written before this encoder have them, byte for byte.
  if (isArray(value)) {
    if (value.length === 0) return '<value><array><data/></array></value>'
    let items = '<value><array><data>'
    for (const item of value) items += encodeValue(item)
    return items + '</data></array></value>'
  }
  return encodeStruct(value)
}

const isArray = (value: XmlRpcValue): value is XmlRpcValue[] => Array.isArray(value)

/** One top-level `<value>` document, without prolog (as XO writes ova.xml and XAPI writes task results). */
export function encodeXmlRpc(value: XmlRpcValue): string {
  return encodeValue(value)
}

export function encodeMethodCall(method: string, params: readonly XmlRpcValue[]): string {
  const encoded = params.map((param) => `<param>${encodeValue(param)}</param>`).join('')
  return `<?xml version="1.0"?><methodCall><methodName>${escapeText(method)}</methodName><params>${encoded}</params></methodCall>`
}

export function encodeMethodResponse(value: XmlRpcValue): string {
  return `<?xml version="1.0"?><methodResponse><params><param>${encodeValue(value)}</param></params></methodResponse>`
}

/** XAPI itself never answers with a fault (its failures are `Status: Failure` structs); clients still meet them from proxies. */
export function encodeFault(code: number, message: string): string {
  const codeMember = `<member><name>faultCode</name><value><int>${Math.trunc(code)}</int></value></member>`
  const string = `<member><name>faultString</name>${encodeValue(message)}</member>`
  return `<?xml version="1.0"?><methodResponse><fault><value><struct>${codeMember}${string}</struct></value></fault></methodResponse>`
}

function childElements(element: Element): Element[] {
  const out: Element[] = []
  for (let node = element.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === node.ELEMENT_NODE) out.push(node as Element)
    else if (node.nodeType === node.TEXT_NODE && (node.nodeValue ?? '').trim() !== '' && element.tagName !== 'value') {
      throw new XmlRpcParseError(`unexpected text in <${element.tagName}>`)
    }
  }
  return out
}

function only(element: Element, tag: string): Element {
  const children = childElements(element)
  const [child] = children
  if (children.length !== 1 || child?.tagName !== tag) throw new XmlRpcParseError(`<${element.tagName}> must hold exactly one <${tag}>`)
  return child
}

function decodeValue(element: Element): XmlRpcValue {
  if (element.tagName !== 'value') throw new XmlRpcParseError(`expected <value>, got <${element.tagName}>`)
  const children = childElements(element)
  const [typed] = children
  if (typed === undefined) return element.textContent ?? ''
  if (children.length > 1) throw new XmlRpcParseError('<value> holds more than one element')
  const text = typed.textContent ?? ''
  switch (typed.tagName) {
    case 'string':
    case 'dateTime.iso8601':
      return text
    case 'int':
    case 'i4':
    case 'i8':
      if (!/^\s*[-+]?\d+\s*$/.test(text)) throw new XmlRpcParseError(`not an integer: ${text}`)
      return text.trim()
    case 'boolean':
      if (text.trim() !== '0' && text.trim() !== '1') throw new XmlRpcParseError(`not a boolean: ${text}`)
      return text.trim() === '1'
    case 'double': {
      const number = Number(text)
      if (text.trim() === '' || Number.isNaN(number)) throw new XmlRpcParseError(`not a double: ${text}`)
      return new XmlRpcDouble(number)
    }
    case 'array': {
      const [data] = childElements(typed)
      if (data === undefined) return []
      if (data.tagName !== 'data') throw new XmlRpcParseError('<array> must hold <data>')
      return childElements(data).map(decodeValue)
    }
    case 'struct': {
      const struct: Record<string, XmlRpcValue> = {}
      for (const member of childElements(typed)) {
        const [name, value] = childElements(member)
        if (member.tagName !== 'member' || name?.tagName !== 'name' || value === undefined) throw new XmlRpcParseError('malformed struct member')
        struct[name.textContent ?? ''] = decodeValue(value)
      }
      return struct
    }
    default:
      throw new XmlRpcParseError(`unknown XML-RPC type ${typed.tagName}`)
  }
}

function parseDocument(xml: string, rootTag: string): Element {
  let root: Element | null
  try {
    root = new DOMParser({ onError: onErrorStopParsing }).parseFromString(xml, 'text/xml').documentElement
  } catch (error) {
    throw new XmlRpcParseError(`malformed XML: ${(error as Error).message}`, { cause: error })
  }
  if (root?.tagName !== rootTag) throw new XmlRpcParseError(`the root element is not <${rootTag}>`)
  return root
}

/** Parses a document whose root is one `<value>`. */
export function decodeXmlRpc(xml: string): XmlRpcValue {
  return decodeValue(parseDocument(xml, 'value'))
}

export function decodeMethodCall(xml: string): XmlRpcCall {
  const root = parseDocument(xml, 'methodCall')
  const children = childElements(root)
  const [name, params] = children
  if (name?.tagName !== 'methodName' || children.length > 2) throw new XmlRpcParseError('<methodCall> must hold <methodName> then <params>')
  const method = (name.textContent ?? '').trim()
  if (method === '') throw new XmlRpcParseError('empty <methodName>')
  if (params === undefined) return { method, params: [] }
  if (params.tagName !== 'params') throw new XmlRpcParseError(`expected <params>, got <${params.tagName}>`)
  return {
    method,
    params: childElements(params).map((param) => {
      if (param.tagName !== 'param') throw new XmlRpcParseError(`expected <param>, got <${param.tagName}>`)
      return decodeValue(only(param, 'value'))
    }),
  }
}

export function decodeMethodResponse(xml: string): XmlRpcResponse {
  const root = parseDocument(xml, 'methodResponse')
  const [body] = childElements(root)
  if (body?.tagName === 'params') return { value: decodeValue(only(only(body, 'param'), 'value')) }
  if (body?.tagName !== 'fault') throw new XmlRpcParseError('<methodResponse> must hold <params> or <fault>')
  const fault = decodeValue(only(body, 'value'))
  if (typeof fault !== 'object' || fault instanceof Date || fault instanceof XmlRpcDouble || isArray(fault)) throw new XmlRpcParseError('a fault is a struct')
  return { fault: { code: Number(fault['faultCode']), message: String(fault['faultString']) } }
}
