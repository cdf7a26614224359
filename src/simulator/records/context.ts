import { createHash } from 'node:crypto'
import type { XoRecord } from '../../driver/types.js'
import { NULL_REF } from '../../xapi/datamodel/index.js'
import { XmlRpcDouble, type XmlRpcValue } from '../../xapi/xml-rpc.js'

/** A XAPI record being built: field → value in the wire model; missing fields take their datamodel defaults. */
export type PartialRecord = Record<string, XmlRpcValue>

/** One XAPI object produced from a lab record. */
export interface XapiObject {
  readonly cls: string
  readonly ref: string
  readonly uuid: string
  readonly fields: PartialRecord
}

/** Reads the lab's XO-shaped records and turns their ids into refs. */
export interface RecordContext {
  /** the ref of the lab object with this id, NULL_REF when there is none */
  ref(id: unknown): string
  /** the lab object with this id */
  object(id: unknown): XoRecord | undefined
}

/** A stable UUID for an object XAPI has and the lab does not (a VM's metrics): the same on every start. */
export function derivedUuid(uuid: string, role: string): string {
  const hex = createHash('sha1').update(`${uuid}/${role}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${hex.slice(18, 20)}-${hex.slice(20, 32)}`
}

export const derivedRef = (uuid: string, role: string): string => `OpaqueRef:${derivedUuid(uuid, role)}`

export const str = (record: XoRecord, field: string, fallback = ''): string => {
  const value = record[field]
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback
}

export const num = (record: XoRecord, field: string, fallback = 0): number => {
  const value = record[field]
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback
}

export const bool = (record: XoRecord, field: string, fallback = false): boolean => {
  const value = record[field]
  return typeof value === 'boolean' ? value : fallback
}

/** A nested object of a lab record (a VM's `memory`), or an empty one. */
export const object = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {})

export const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [])

/** A map of strings, as XAPI's `(string -> string) map`: other values are stringified. */
export const stringMap = (value: unknown): Record<string, string> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {}
  const out: Record<string, string> = {}
  for (const [key, item] of Object.entries(value)) if (item !== null && item !== undefined) out[key] = typeof item === 'string' ? item : JSON.stringify(item)
  return out
}

export const refs = (context: RecordContext, value: unknown): string[] => strings(value).map((id) => context.ref(id)).filter((ref) => ref !== NULL_REF)

/** Epoch seconds (or null) as a XAPI datetime; unset is the epoch. */
export const seconds = (value: unknown): Date => new Date(typeof value === 'number' ? value * 1000 : 0)

export const double = (value: number): XmlRpcDouble => new XmlRpcDouble(value)

export const common = (record: XoRecord): { uuid: string; ref: string } => ({ uuid: str(record, 'uuid', record.id), ref: str(record, '_xapiRef', `OpaqueRef:${record.id}`) })
