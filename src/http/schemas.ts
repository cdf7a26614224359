import { Type } from '@sinclair/typebox'
import type { ResponseSpec } from './route.js'

export const ErrorBodySchema = Type.Object(
  {
    error: Type.String({ description: 'Human-readable message' }),
    code: Type.String({ description: 'Stable machine-readable code, e.g. NO_SUCH_OBJECT' }),
    data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Details; for 422, `errors` lists each failing field' })),
    info: Type.Optional(Type.String({ description: 'Set on a pool\'s own refusal (`XAPI_ERROR`, 500), as the reference sets it on a XapiError' })),
  },
  { $id: 'Error' },
)

export const CreatedSchema = Type.Object({ id: Type.String() }, { $id: 'Created' })

const error = (description: string): ResponseSpec => ({ description, schema: ErrorBodySchema })

/** The errors any authenticated route can answer. */
export const ErrorResponses: Readonly<Record<number, ResponseSpec>> = {
  400: error('Bad request: malformed JSON, bad query value, or both credential forms'),
  401: error('Missing, invalid or expired credentials'),
  403: error('Not enough permissions or privileges'),
  404: error('No such object'),
}

export const BodyErrorResponses: Readonly<Record<number, ResponseSpec>> = {
  ...ErrorResponses,
  409: error('Conflict with the current state'),
  413: error('Body larger than the limit'),
  415: error('Body not sent as application/json'),
  422: error('Body or parameters fail their schema'),
}
