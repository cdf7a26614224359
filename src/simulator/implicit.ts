import type { XapiClass } from '../xapi/datamodel/index.js'
import { typeKind } from '../xapi/datamodel/index.js'
import type { XmlRpcStruct, XmlRpcValue } from '../xapi/xml-rpc.js'
import type { Handler } from './context.js'
import { XapiFailure } from './failures.js'
import { setField } from './writes.js'

const text = (value: XmlRpcValue | undefined): string => (typeof value === 'string' ? value : String(value))
const asMap = (value: XmlRpcValue | undefined): XmlRpcStruct => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as XmlRpcStruct) : {})

/**
 * The messages XAPI generates for every class from its fields (the
 * datamodel marks them `implicit`): getters, setters of RW fields, map and
 * set edits, lookups by uuid and name. Constructors and destructors are not
 * among them here; the classes that have them get explicit handlers.
 */
export function implicitHandler(cls: XapiClass, name: string): Handler | undefined {
  const field = (prefix: string) => cls.fields.get(name.slice(prefix.length))
  switch (name) {
    case 'get_all':
      return ({ db }) => [...db.ofClass(cls.name)].map((object) => object.ref)
    case 'get_all_records':
      return ({ db }) => {
        const out: Record<string, XmlRpcValue> = {}
        for (const object of db.ofClass(cls.name)) out[object.ref] = object.record
        return out
      }
    case 'get_record':
      return ({ db }, [ref]) => db.expect(cls.name, text(ref)).record
    case 'get_by_uuid':
      return ({ db }, [uuid]) => db.byUuid(cls.name, text(uuid)).ref
    case 'get_by_name_label':
      return ({ db }, [label]) => [...db.ofClass(cls.name)].filter((object) => object.record['name_label'] === label).map((object) => object.ref)
  }
  if (name.startsWith('get_') && field('get_') !== undefined) {
    const fieldName = name.slice(4)
    return ({ db }, [ref]) => db.expect(cls.name, text(ref)).record[fieldName] ?? ''
  }
  if (name.startsWith('set_') && field('set_')?.[2] === 'RW') {
    const fieldName = name.slice(4)
    return async (context, [ref, value]) => {
      await setField(context, cls.name, text(ref), fieldName, value ?? '')
      return ''
    }
  }
  const mapField = name.startsWith('add_to_') ? field('add_to_') : name.startsWith('remove_from_') ? field('remove_from_') : undefined
  if (mapField !== undefined && typeKind(mapField[1]) === 'map') {
    const [fieldName] = mapField
    const adding = name.startsWith('add_to_')
    return async (context, [ref, key, value]) => {
      const object = context.db.expect(cls.name, text(ref))
      const map = { ...asMap(object.record[fieldName]) }
      const entry = text(key)
      // As XAPI: adding a key already there fails, removing one that is not there does nothing.
      if (adding && entry in map) throw new XapiFailure('MAP_DUPLICATE_KEY', cls.name, fieldName, object.ref, entry)
      if (adding) map[entry] = value ?? ''
      else if (entry in map) delete map[entry]
      else return ''
      await setField(context, cls.name, object.ref, fieldName, map)
      return ''
    }
  }
  const setFieldDef = name.startsWith('add_') ? field('add_') : name.startsWith('remove_') ? field('remove_') : undefined
  if (setFieldDef !== undefined && typeKind(setFieldDef[1]) === 'set') {
    const [fieldName] = setFieldDef
    const adding = name.startsWith('add_')
    return async (context, [ref, value]) => {
      const object = context.db.expect(cls.name, text(ref))
      const current = Array.isArray(object.record[fieldName]) ? (object.record[fieldName] as XmlRpcValue[]) : []
      const present = current.some((item) => item === value)
      if (adding === present) return ''
      const next = adding ? [...current, value ?? ''] : current.filter((item) => item !== value)
      await setField(context, cls.name, object.ref, fieldName, next)
      return ''
    }
  }
  return undefined
}
