import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TSchema, TObject } from '@sinclair/typebox'
import type { Logger } from 'pino'
import type { Principal } from '../auth/principal.js'

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** A privilege from spec 2's catalogue: a resource and an action on it. */
export interface Privilege {
  readonly resource: string
  readonly action: string
}

/**
 * Who may call a route. Checked before the handler runs, so a handler never
 * touches data the caller may not see.
 * - `public`: no credentials needed (docs, redirects).
 * - `authenticated`: any logged-in user.
 * - `self`: the caller whose id is in path parameter `param`; with `only`,
 *   administrators are held to it too (tokens are personal).
 * - `privilege`: administrators, and (with access control) holders of it.
 * A route with none of these is administrator-only.
 */
export interface Access {
  readonly public?: true
  readonly authenticated?: true
  readonly self?: { readonly param: string; readonly only?: true }
  readonly privilege?: Privilege
}

export interface ResponseSpec {
  readonly description: string
  readonly schema?: TSchema
  /** defaults to application/json when a schema is given */
  readonly contentType?: string
  readonly headers?: Record<string, string>
}

export interface RouteContext<Body = unknown> {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly params: Readonly<Record<string, string>>
  readonly query: Readonly<Record<string, unknown>>
  readonly body: Body
  readonly principal: Principal | undefined
  readonly requestId: string
  readonly log: Logger
}

export interface RouteDef {
  readonly method: HttpMethod
  readonly path: string
  readonly summary: string
  readonly tags: readonly string[]
  readonly operationId: string
  readonly access: Access
  readonly params?: TObject
  readonly query?: TObject
  readonly body?: TSchema
  readonly bodyRequired?: boolean
  readonly responses: Readonly<Record<number, ResponseSpec>>
  /** Writes the whole response; throw a KeelError to answer an error. */
  readonly handler: (ctx: RouteContext) => Promise<void> | void
  /** Left out of the OpenAPI document (asset files, redirects). */
  readonly hidden?: true
}

export function defineRoute(def: RouteDef): RouteDef {
  return def
}
