import {
  Type,
  type SchemaOptions,
  type Static,
  type TLiteral,
  type TObject,
  type TProperties,
  type TSchema,
  type TString,
  type TUnsafe,
} from '@sinclair/typebox'

/**
 * A JSON object with free-form keys. Written as `additionalProperties` rather
 * than TypeBox's `Type.Record` (`patternProperties: {"^(.*)$": …}`) because
 * that is how OpenAPI readers and code generators expect a map to look.
 */
export function StringMap<T extends TSchema>(value: T, options: SchemaOptions = {}): TUnsafe<Record<string, Static<T>>> {
  return Type.Unsafe<Record<string, Static<T>>>(Type.Object({}, { ...options, additionalProperties: value }))
}

/** A `Record<string, string>` such as XAPI's `other_config`. */
export const StringDict = (description?: string): TUnsafe<Record<string, string>> =>
  StringMap(Type.String(), description === undefined ? {} : { description })

export const Nullable = <T extends TSchema>(schema: T, options: SchemaOptions = {}) =>
  Type.Union([schema, Type.Null()], options)

/** The id of another object; `description` names its type. */
export const Link = (description: string): TString => Type.String({ description })

export const Links = (description: string) => Type.Array(Type.String(), { description })

export const Tags = () => Type.Array(Type.String(), { description: 'free-form labels, unique' })

export const Operations = (description = 'operations in progress, by task id') => StringDict(description)

/** Whole seconds since the Unix epoch, as XAPI-derived times are in XO records. */
export const Seconds = (description: string) => Type.Integer({ description: `${description} (seconds since the epoch)` })

export const Bytes = (description: string) => Type.Integer({ minimum: 0, description: `${description}, in bytes` })

/** Fields every XAPI-backed record carries. */
const xapiObjectProperties = {
  id: Type.String({
    description: 'identifier: the XAPI uuid, except for default templates where it is `<pool id>-<uuid>`',
  }),
  uuid: Type.String({ format: 'uuid' }),
  $pool: Link('id of the pool the object belongs to'),
  $poolId: Link('deprecated duplicate of `$pool`'),
  _xapiRef: Type.String({ description: 'XAPI opaque reference (`OpaqueRef:…`)', pattern: '^OpaqueRef:' }),
}

type RecordProperties<Type extends string, P extends TProperties> = { type: TLiteral<Type> } & typeof xapiObjectProperties & P

/**
 * A closed record schema (`additionalProperties: false`): the schema is the
 * contract for validation, serialization and the OpenAPI document.
 */
export function xapiRecord<Type extends string, P extends TProperties>(
  $id: string,
  type: Type,
  properties: P,
  description: string,
): TObject<RecordProperties<Type, P>> {
  return Type.Object({ type: Type.Literal(type), ...xapiObjectProperties, ...properties } as RecordProperties<Type, P>, {
    $id,
    description,
    additionalProperties: false,
  })
}
