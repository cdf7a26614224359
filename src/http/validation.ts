import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { TObject, TSchema } from '@sinclair/typebox'
import { badQuery, invalidParameters } from '../errors.js'

const bodyAjv = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false })
const queryAjv = new Ajv({ allErrors: true, strict: false, coerceTypes: true, useDefaults: true })
addFormats.default(bodyAjv)
addFormats.default(queryAjv)

export type Check = (value: unknown) => unknown

function errorPath(prefix: string, error: ErrorObject): string {
  const pointer = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (error.keyword === 'required') pointer.push(String(error.params['missingProperty']))
  if (error.keyword === 'additionalProperties') pointer.push(String(error.params['additionalProperty']))
  return [prefix, ...pointer].filter((p) => p !== '').join('.')
}

function describe(error: ErrorObject): string {
  if (error.keyword === 'additionalProperties') return 'is not an accepted field'
  if (error.keyword === 'required') return 'is required'
  return error.message ?? 'is invalid'
}

/** Body and path-parameter checks: 422 listing each failing field. */
export function compileBodyCheck(schema: TSchema, prefix: string): Check {
  const validate: ValidateFunction = bodyAjv.compile(schema)
  return (value) => {
    if (validate(value)) return value
    const errors = (validate.errors ?? []).map((e) => ({ path: errorPath(prefix, e), message: describe(e) }))
    throw invalidParameters(errors)
  }
}

/**
 * Query checks coerce strings to the declared types; a bare flag (`?ndjson`)
 * counts as true, as the legacy API accepted. A bad value is a 400 naming the
 * parameter, as spec'd for collection parameters.
 */
export function compileQueryCheck(schema: TObject): (query: URLSearchParams) => Record<string, unknown> {
  const validate = queryAjv.compile(schema)
  const booleans = new Set(
    Object.entries(schema.properties)
      .filter(([, s]) => (s as { type?: unknown }).type === 'boolean')
      .map(([name]) => name),
  )
  return (query) => {
    const value: Record<string, unknown> = {}
    for (const [name, raw] of query) {
      if (!(name in schema.properties) || name in value) continue
      value[name] = booleans.has(name) && raw === '' ? 'true' : raw
    }
    if (validate(value)) return value
    const first = validate.errors?.[0]
    const name = first === undefined ? 'query' : errorPath('', first) || 'query'
    throw badQuery(name, first === undefined ? 'is invalid' : describe(first))
  }
}
