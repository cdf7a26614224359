import { enumValues, parseDateTime, typeKind } from '../xapi/datamodel/index.js'
import { XmlRpcDouble, type XmlRpcValue } from '../xapi/xml-rpc.js'
import { fieldTypeError } from './failures.js'

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) && !(value instanceof XmlRpcDouble)

/**
 * A call's parameter, from either wire (XML-RPC sends ints as strings and
 * doubles typed; JSON-RPC sends numbers, or strings for ints), as the
 * datamodel type says: ints and floats as numbers, datetimes as Dates, sets
 * as arrays and maps as objects. FIELD_TYPE_ERROR names the parameter that
 * does not fit.
 */
export function coerce(value: unknown, type: string, name: string): XmlRpcValue {
  const fail = () => fieldTypeError(name)
  switch (typeKind(type)) {
    case 'int': {
      const number = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value
      if (typeof number !== 'number' || !Number.isSafeInteger(number)) throw fail()
      return number
    }
    case 'float': {
      const number = value instanceof XmlRpcDouble ? value.value : typeof value === 'string' && value.trim() !== '' ? Number(value) : value
      if (typeof number !== 'number' || Number.isNaN(number)) throw fail()
      return new XmlRpcDouble(number)
    }
    case 'bool':
      if (typeof value !== 'boolean') throw fail()
      return value
    case 'datetime':
      if (value instanceof Date) return value
      if (typeof value !== 'string' || !/^\d{4}-?\d{2}-?\d{2}T/.test(value)) throw fail()
      return parseDateTime(value)
    case 'enum': {
      if (typeof value !== 'string') throw fail()
      const values = enumValues(type.slice(5))
      if (values !== undefined && !values.includes(value)) throw fail()
      return value
    }
    case 'set': {
      if (!Array.isArray(value)) throw fail()
      const item = type.replace(/ set$/, '')
      return value.map((entry: unknown) => coerce(entry, item, name))
    }
    case 'map': {
      if (!isPlainObject(value)) throw fail()
      const valueType = type.slice(type.indexOf(' -> ') + 4, type.lastIndexOf(')'))
      return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, coerce(entry, valueType, name)]))
    }
    case 'record':
      if (!isPlainObject(value)) throw fail()
      return value as Record<string, XmlRpcValue>
    default:
      if (typeof value !== 'string') throw fail()
      return value
  }
}
