import { DOMImplementation, DOMParser, onErrorStopParsing, XMLSerializer, type Document, type Element } from '@xmldom/xmldom'

/**
 * XML-RPC values as ova.xml uses them (notes 2.5). Integers travel as bare
 * strings, like XAPI and XO write them; doubles must be marked explicitly
 * because XAPI types them apart (HVM_shadow_multiplier).
 */
export type XmlRpcValue = string | number | boolean | Date | XmlRpcDouble | XmlRpcValue[] | XmlRpcStruct

export interface XmlRpcStruct {
  readonly [key: string]: XmlRpcValue
}

export class XmlRpcDouble {
  constructor(readonly value: number) {}
}

function valueElement(document: Document, value: XmlRpcValue): Element {
  const element = document.createElement('value')
  const typed = (tag: string, text: string): void => {
    const child = document.createElement(tag)
    child.appendChild(document.createTextNode(text))
    element.appendChild(child)
  }
  if (typeof value === 'string') element.appendChild(document.createTextNode(value))
  else if (typeof value === 'number') element.appendChild(document.createTextNode(String(Math.trunc(value))))
  else if (typeof value === 'boolean') typed('boolean', value ? '1' : '0')
  else if (value instanceof XmlRpcDouble) typed('double', String(value.value))
  else if (value instanceof Date) typed('dateTime.iso8601', value.toISOString().replace(/[-]|\.\d+/g, ''))
  else if (Array.isArray(value)) {
    const array = document.createElement('array')
    const data = document.createElement('data')
    for (const item of value) data.appendChild(valueElement(document, item))
    array.appendChild(data)
    element.appendChild(array)
  } else {
    const struct = document.createElement('struct')
    for (const [key, member] of Object.entries(value)) {
      const memberElement = document.createElement('member')
      const name = document.createElement('name')
      name.appendChild(document.createTextNode(key))
      memberElement.appendChild(name)
      memberElement.appendChild(valueElement(document, member))
      struct.appendChild(memberElement)
    }
    element.appendChild(struct)
  }
  return element
}

/** One top-level `<value>` document, without prolog (as XO writes it). */
export function encodeXmlRpc(value: XmlRpcValue): string {
  const document = new DOMImplementation().createDocument(null, 'value')
  const root = valueElement(document, value)
  document.replaceChild(root, document.documentElement as Element)
  return new XMLSerializer().serializeToString(document)
}

function childElements(element: Element): Element[] {
  const out: Element[] = []
  for (let node = element.firstChild; node !== null; node = node.nextSibling) if (node.nodeType === node.ELEMENT_NODE) out.push(node as Element)
  return out
}

function decodeValue(element: Element): XmlRpcValue {
  const [typed] = childElements(element)
  if (typed === undefined) return element.textContent ?? ''
  const text = typed.textContent ?? ''
  switch (typed.tagName) {
    case 'string':
    case 'int':
    case 'i4':
    case 'i8':
      return text
    case 'boolean':
      return text.trim() === '1'
    case 'double':
      return new XmlRpcDouble(Number(text))
    case 'dateTime.iso8601':
      return text
    case 'array': {
      const data = childElements(typed)[0]
      return data === undefined ? [] : childElements(data).map(decodeValue)
    }
    case 'struct': {
      const struct: Record<string, XmlRpcValue> = {}
      for (const member of childElements(typed)) {
        const [name, value] = childElements(member)
        if (name?.tagName !== 'name' || value?.tagName !== 'value') throw new Error('malformed struct member')
        struct[name.textContent ?? ''] = decodeValue(value)
      }
      return struct
    }
    default:
      throw new Error(`unknown XML-RPC type ${typed.tagName}`)
  }
}

/** Parses a document whose root is one `<value>`; throws on malformed XML or XML-RPC. */
export function decodeXmlRpc(xml: string): XmlRpcValue {
  const document = new DOMParser({ onError: onErrorStopParsing }).parseFromString(xml, 'text/xml')
  const root = document.documentElement
  if (root?.tagName !== 'value') throw new Error('the root element is not <value>')
  return decodeValue(root)
}
