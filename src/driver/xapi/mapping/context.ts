import { NULL_REF, parseDateTime } from '../../../xapi/datamodel/index.js'
import { XmlRpcDouble } from '../../../xapi/xml-rpc.js'

/** A XAPI record as the wire gives it: JSON-RPC values (or the XML-RPC model's, in tests over the simulator's database). */
export type XapiRecord = Readonly<Record<string, unknown>>

export interface XapiObject {
  readonly cls: string
  readonly ref: string
  readonly record: XapiRecord
}

/** What mapping one record may read of the others. */
export interface MappingContext {
  /** the pool's UUID: `$pool` of every object */
  readonly poolId: string
  /** the record a ref names (reads are noted: the record is mapped again when that one changes) */
  object(ref: unknown): XapiObject | undefined
  /** XO's link(): the id of the object a ref names, undefined for NULL or an unknown ref */
  id(ref: unknown): string | undefined
  /** the id of the object with this UUID (messages name their object by UUID) */
  idOfUuid(uuid: string): string | undefined
}

export type Fields = Record<string, unknown>

export const isRef = (value: unknown): value is string => typeof value === 'string' && value !== '' && value !== NULL_REF

export const text = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '')

export const num = (value: unknown): number => {
  if (typeof value === 'number') return value
  if (value instanceof XmlRpcDouble) return value.value
  const parsed = Number(value)
  return typeof value === 'string' && value !== '' && Number.isFinite(parsed) ? parsed : 0
}

export const bool = (value: unknown): boolean => value === true

/*
 * A list or map the wire gives as strings already (JSON-RPC's always are) is the record's own, not a
 * copy: the XO record and the index's XAPI record share it, as neither changes (issue 28: a copy of
 * each of a VM's maps and lists doubled them in the heap).
 */
const strings = (value: object): boolean => {
  for (const item of Object.values(value)) if (typeof item !== 'string') return false
  return true
}

export const list = (value: unknown): string[] => (Array.isArray(value) ? (strings(value) ? (value as string[]) : value.map(String)) : [])

export const map = (value: unknown): Record<string, string> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date || value instanceof XmlRpcDouble) return {}
  if (Object.getPrototypeOf(value) === Object.prototype && strings(value)) return value as Record<string, string>
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, String(item)]))
}

/** XO's parseDateTime: seconds since the epoch, null for unset (the epoch itself). */
export function seconds(value: unknown): number | null {
  const date = value instanceof Date ? value : typeof value === 'string' && value !== '' ? parseDateTime(value) : undefined
  const ms = date?.getTime()
  return ms === undefined || Number.isNaN(ms) || ms === 0 ? null : Math.round(ms / 1000)
}

/** `"1733400001."` as XAPI writes times in other_config: seconds, or null. */
export const floatSeconds = (value: string | undefined): number | null => {
  const parsed = value === undefined ? NaN : parseFloat(value)
  return Number.isFinite(parsed) ? Math.round(parsed) : null
}

/** The ids of refs, in order; refs naming nothing known are left out. */
export const ids = (context: MappingContext, refs: unknown): string[] =>
  list(refs)
    .map((ref) => context.id(ref))
    .filter((id): id is string => id !== undefined)

/** An object without its undefined members, so that an unset link is absent, as in the lab's records. */
export const defined = (fields: Fields): Fields => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))

/** The identity every record starts with. */
export const base = (type: string, id: string, uuid: string, ref: string, poolId: string): Fields => ({ type, id, uuid, $pool: poolId, $poolId: poolId, _xapiRef: ref })
