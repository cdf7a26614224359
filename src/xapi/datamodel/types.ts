/** A field's default as the datamodel writes it, parsed: strings for strings, enums, refs and datetimes. */
export type DefaultValue = string | number | boolean | readonly DefaultValue[] | { readonly [key: string]: DefaultValue }

export type Qualifier = 'RO/runtime' | 'RO/constructor' | 'RW'

/** `[name, type, qualifier, default?]`; the type as the datamodel spells it (`VDI ref set`, `(string -> string) map`). */
export type FieldDef = readonly [name: string, type: string, qualifier: Qualifier, defaultValue?: DefaultValue]

/** `[name, params as [name, type], result type, implicit]`; params include `session_id` where the message takes one. */
export type MessageDef = readonly [name: string, params: readonly (readonly [name: string, type: string])[], result: string, implicit: boolean]

export interface ClassDef {
  readonly name: string
  readonly fields: readonly FieldDef[]
  readonly messages: readonly MessageDef[]
}

export interface EnumDef {
  readonly name: string
  readonly values: readonly string[]
}
