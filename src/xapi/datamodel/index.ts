import { XmlRpcDouble, type XmlRpcValue } from '../xml-rpc.js'
import { CLASSES, ENUMS } from './generated.js'
import type { ClassDef, DefaultValue, FieldDef, MessageDef } from './types.js'

export type { ClassDef, FieldDef, MessageDef } from './types.js'

export const NULL_REF = 'OpaqueRef:NULL'

export interface XapiClass {
  readonly name: string
  readonly fields: ReadonlyMap<string, FieldDef>
  readonly messages: ReadonlyMap<string, MessageDef>
}

const index = (def: ClassDef): XapiClass => ({
  name: def.name,
  fields: new Map(def.fields.map((f) => [f[0], f])),
  messages: new Map(def.messages.map((m) => [m[0], m])),
})

const classes = new Map(CLASSES.map((def) => [def.name, index(def)]))
/** event.from names classes in lower case (`vm`, `vdi`); calls use the canonical case. */
const byLowerCase = new Map([...classes.values()].map((c) => [c.name.toLowerCase(), c]))
const enums = new Map(ENUMS.map((e) => [e.name, e.values]))

export function xapiClass(name: string): XapiClass | undefined {
  return classes.get(name)
}

export function xapiClassOfEvent(name: string): XapiClass | undefined {
  return byLowerCase.get(name.toLowerCase())
}

export function servedClasses(): Iterable<XapiClass> {
  return classes.values()
}

export function enumValues(name: string): readonly string[] | undefined {
  return enums.get(name)
}

export type TypeKind = 'string' | 'int' | 'float' | 'bool' | 'datetime' | 'ref' | 'enum' | 'set' | 'map' | 'record' | 'option'

export function typeKind(type: string): TypeKind {
  if (type.endsWith(' set')) return 'set'
  if (type.endsWith(' map')) return 'map'
  if (type.endsWith(' ref')) return 'ref'
  if (type.endsWith(' record')) return 'record'
  if (type.endsWith(' option')) return 'option'
  if (type.startsWith('enum ')) return 'enum'
  if (type === 'int' || type === 'float' || type === 'bool' || type === 'datetime') return type
  return 'string'
}

/** A datamodel value in the wire model: floats marked as doubles, datetimes as Dates. */
function toWire(value: DefaultValue, type: string): XmlRpcValue {
  const kind = typeKind(type)
  if (kind === 'float') return new XmlRpcDouble(Number(value))
  if (kind === 'datetime') return parseDateTime(String(value))
  if (kind === 'set' && Array.isArray(value)) return value.map((item: DefaultValue) => toWire(item, type.replace(/ set$/, '')))
  if (kind === 'map' && typeof value === 'object' && !Array.isArray(value)) {
    const valueType = type.slice(type.indexOf(' -> ') + 4, type.lastIndexOf(')'))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toWire(v, valueType)]))
  }
  return value as XmlRpcValue
}

/** XAPI's `20240101T13:20:11Z` (or with separators) as a Date. */
export function parseDateTime(text: string): Date {
  const match = /^(\d{4})-?(\d{2})-?(\d{2})T(\d{2}):?(\d{2}):?(\d{2})/.exec(text)
  if (match === null) return new Date(0)
  const [, y, mo, d, h, mi, s] = match.map(Number) as [number, number, number, number, number, number, number]
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s))
}

/** What a type holds when nothing says otherwise. */
export function zeroOf(type: string): XmlRpcValue {
  switch (typeKind(type)) {
    case 'int':
      return 0
    case 'float':
      return new XmlRpcDouble(0)
    case 'bool':
      return false
    case 'datetime':
      return new Date(0)
    case 'ref':
      return NULL_REF
    case 'set':
      return []
    case 'map':
    case 'record':
      return {}
    case 'enum':
      return enums.get(type.slice(5))?.[0] ?? ''
    default:
      return ''
  }
}

/** The field's datamodel default, else its type's zero. */
export function defaultOf(field: FieldDef): XmlRpcValue {
  const [, type, , value] = field
  return value === undefined ? zeroOf(type) : toWire(value, type)
}
