import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TObject, TSchema } from '@sinclair/typebox'
import type { Logger } from 'pino'
import type { Access } from '../acl/access.js'
import type { Principal } from '../auth/principal.js'

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export interface ResponseSpec {
  readonly description: string
  readonly schema?: TSchema
  /** defaults to application/json when a schema is given */
  readonly contentType?: string
  readonly headers?: Record<string, string>
}

/** What a route's handler receives, its inputs typed from the route's own schemas. */
export interface RouteContext<Params = Readonly<Record<string, string>>, Query = Readonly<Record<string, unknown>>, Body = unknown, Who = Principal | undefined> {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly params: Params
  readonly query: Query
  readonly body: Body
  readonly principal: Who
  readonly requestId: string
  readonly log: Logger
}

// TypeBox's `static` member is its Static<> without the generic machinery, which
// TypeScript gives up on (too deep) inside an inferred handler's context.
/** A schema's value type; without a schema, the route receives an empty object. */
type Input<S> = S extends TSchema ? S['static'] : Readonly<Record<string, never>>
/** A body the route requires is always there; an optional one may be absent. */
type BodyOf<S, Required> = S extends TSchema ? (Required extends true ? S['static'] : S['static'] | undefined) : undefined
/** Only public routes run without a caller. */
type PrincipalOf<A> = A extends { readonly public: true } ? undefined : Principal

interface RouteShape {
  readonly method: HttpMethod
  readonly path: string
  readonly summary: string
  readonly tags: readonly string[]
  readonly operationId: string
  readonly responses: Readonly<Record<number, ResponseSpec>>
  /** Left out of the OpenAPI document (asset files, redirects). */
  readonly hidden?: true
  /**
   * Marks a route that streams a body either way: its request is cut after this
   * many ms without a byte moving ('default': the server's `[http] idleTimeout`),
   * instead of the bounded time a JSON body gets.
   */
  readonly idleTimeout?: number | 'default'
}

/** A route as its author writes it: the handler's inputs follow from the schemas and the access. */
export interface RouteSpec<
  A extends Access,
  P extends TObject | undefined,
  Q extends TObject | undefined,
  B extends TSchema | undefined,
  R extends boolean,
> extends RouteShape {
  readonly access: A
  readonly params?: P
  readonly query?: Q
  readonly body?: B
  readonly bodyRequired?: R
  /** Writes the whole response; throw a KeelError to answer an error. */
  readonly handler: (ctx: RouteContext<Input<P>, Input<Q>, BodyOf<B, R>, PrincipalOf<A>>) => Promise<void> | void
}

/** A route as the router holds it, its inputs checked against its schemas before the handler runs. */
export interface RouteDef extends RouteShape {
  readonly access: Access
  readonly params?: TObject
  readonly query?: TObject
  readonly body?: TSchema
  readonly bodyRequired?: boolean
  readonly handler: (ctx: RouteContext) => Promise<void> | void
}

export function defineRoute<
  A extends Access,
  P extends TObject | undefined = undefined,
  Q extends TObject | undefined = undefined,
  B extends TSchema | undefined = undefined,
  R extends boolean = false,
>(spec: RouteSpec<A, P, Q, B, R>): RouteDef {
  // The router validates params, query and body against these very schemas and
  // authenticates every non-public route before calling the handler, which is
  // what makes the narrower types of its context true. The handler is widened
  // through `never` first: comparing its context with RouteContext member by
  // member is too deep for TypeScript once the schemas are large.
  const handler: (ctx: never) => Promise<void> | void = spec.handler
  return { ...spec, handler: handler as RouteDef['handler'] }
}
