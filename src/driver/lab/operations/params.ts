import { invalidParameters } from '../../../errors.js'
import type { Created, XoRecord } from '../../types.js'
import type { Operation } from './run.js'

export type Params = Readonly<Record<string, unknown>>

/** One action of one type, carried out by the lab. */
export type ActionHandler = (op: Operation, object: XoRecord, params: Params) => Promise<Created | undefined>

// The REST layer has validated the parameters against their schemas; these
// only keep a direct caller from reaching the lab with the wrong types.

export function optionalString(params: Params, key: string): string | undefined {
  const value = params[key]
  if (value === undefined || typeof value === 'string') return value
  throw invalidParameters([{ path: `body.${key}`, message: 'must be a string' }])
}

export function requiredString(params: Params, key: string): string {
  const value = optionalString(params, key)
  if (value === undefined) throw invalidParameters([{ path: `body.${key}`, message: 'is required' }])
  return value
}

export function optionalStringMap(params: Params, key: string): Readonly<Record<string, string>> | undefined {
  const value = params[key]
  if (value === undefined) return undefined
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((entry) => typeof entry === 'string')) {
    return value as Readonly<Record<string, string>>
  }
  throw invalidParameters([{ path: `body.${key}`, message: 'must be an object of strings' }])
}

export function optionalBoolean(params: Params, key: string): boolean | undefined {
  const value = params[key]
  if (value === undefined || typeof value === 'boolean') return value
  throw invalidParameters([{ path: `body.${key}`, message: 'must be a boolean' }])
}

export function optionalInteger(params: Params, key: string): number | undefined {
  const value = params[key]
  if (value === undefined || Number.isSafeInteger(value)) return value as number | undefined
  throw invalidParameters([{ path: `body.${key}`, message: 'must be an integer' }])
}

export function optionalStrings(params: Params, key: string): readonly string[] | undefined {
  const value = params[key]
  if (value === undefined) return undefined
  if (Array.isArray(value) && value.every((entry) => typeof entry === 'string')) return value as readonly string[]
  throw invalidParameters([{ path: `body.${key}`, message: 'must be an array of strings' }])
}
