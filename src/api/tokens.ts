import { Type, type Static } from '@sinclair/typebox'
import type { TokenStore } from '../auth/tokens.js'
import { parseDuration } from '../config/duration.js'
import { invalidParameters } from '../errors.js'
import { sendJson, sendNoContent, redirect } from '../http/reply.js'
import { defineRoute, type HttpMethod, type RouteDef } from '../http/route.js'
import { BodyErrorResponses, ErrorResponses } from '../http/schemas.js'
import { CreateTokenBody, ListedTokenSchema, TokenRecordSchema } from '../model/directory.js'
import { BASE } from './paths.js'

export interface TokenPolicy {
  readonly defaultTokenValidity: number
  readonly maxTokenValidity: number
}

const MIN_VALIDITY = 60_000

function validity(expiresIn: string | number | undefined, policy: TokenPolicy): number {
  if (expiresIn === undefined) return policy.defaultTokenValidity
  const ms = parseDuration(expiresIn)
  if (ms === undefined) {
    throw invalidParameters([{ path: 'body.expiresIn', message: 'must be a duration such as "1 hour" or a number of milliseconds' }])
  }
  if (ms < MIN_VALIDITY) throw invalidParameters([{ path: 'body.expiresIn', message: 'must be at least 60 seconds' }])
  if (ms > policy.maxTokenValidity) {
    throw invalidParameters([
      { path: 'body.expiresIn', message: `must not exceed maxTokenValidity (${policy.maxTokenValidity} ms)` },
    ])
  }
  return ms
}

export function tokenRoutes(tokens: TokenStore, policy: TokenPolicy): RouteDef[] {
  const path = `${BASE}/users/:id/authentication_tokens`
  const self = { self: { param: 'id', only: true } } as const
  const responses = {
    201: { description: 'The new token; its `id` is the secret', schema: Type.Object({ token: TokenRecordSchema }) },
    ...BodyErrorResponses,
  }
  const create = (userId: string, input: Static<typeof CreateTokenBody>) =>
    tokens.create({
      userId,
      validity: validity(input.expiresIn, policy),
      ...(input.description === undefined ? {} : { description: input.description }),
      ...(input.client === undefined ? {} : { clientId: input.client.id }),
    })
  return [
    defineRoute({
      method: 'POST',
      path,
      operationId: 'create-token',
      summary: 'Create an authentication token for yourself',
      tags: ['tokens'],
      access: self,
      params: Type.Object({ id: Type.String() }),
      body: CreateTokenBody,
      responses,
      handler: ({ res, params, body }) => sendJson(res, 201, { token: create(params.id, body ?? {}) }),
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/users/authentication_tokens`,
      operationId: 'create-token-deprecated',
      summary: 'Create an authentication token for yourself (the reference\'s older path; prefer /users/<id>/authentication_tokens)',
      tags: ['tokens'],
      access: { authenticated: true },
      body: CreateTokenBody,
      responses,
      handler: ({ res, body, principal }) => sendJson(res, 201, { token: create(principal.id, body ?? {}) }),
    }),
    defineRoute({
      method: 'GET',
      path,
      operationId: 'list-tokens',
      summary: 'List your tokens (without their secrets)',
      tags: ['tokens'],
      access: self,
      params: Type.Object({ id: Type.String() }),
      responses: { 200: { description: 'Your unexpired tokens', schema: Type.Array(ListedTokenSchema) }, ...ErrorResponses },
      handler: ({ res, params }) => sendJson(res, 200, tokens.list(params.id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${path}/:identifier`,
      operationId: 'revoke-token',
      summary: 'Revoke one of your tokens by its identifier',
      tags: ['tokens'],
      access: self,
      params: Type.Object({ id: Type.String(), identifier: Type.String() }),
      responses: { 204: { description: 'Revoked' }, ...ErrorResponses },
      handler: ({ res, params }) => {
        tokens.revoke(params.id, params.identifier)
        sendNoContent(res)
      },
    }),
  ]
}

/** `/users/me` and everything under it answer 307 to the same path with the caller's id. */
export function meRoutes(): RouteDef[] {
  const methods: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
  return ['', '/*'].flatMap((suffix) =>
    methods.map((method) =>
      defineRoute({
        method,
        path: `${BASE}/users/me${suffix}`,
        operationId: `me-${method.toLowerCase()}${suffix === '' ? '' : '-sub'}`,
        summary: 'Redirects to the same path with your own user id',
        tags: ['users'],
        access: { authenticated: true },
        hidden: true,
        responses: { 307: { description: 'Temporary redirect keeping the method and body' }, ...ErrorResponses },
        handler: ({ req, res, principal }) => {
          const target = req.url ?? ''
          const marker = `${BASE}/users/me`
          const at = target.indexOf(marker)
          const rest = target.slice(at + marker.length)
          redirect(res, 307, `${BASE}/users/${encodeURIComponent(principal?.id ?? '')}${rest}`)
        },
      }),
    ),
  )
}
