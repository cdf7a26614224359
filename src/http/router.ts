import FindMyWay from 'find-my-way'
import type { RouteDef, HttpMethod } from './route.js'
import { compileBodyCheck, compileQueryCheck, type Check } from './validation.js'

export interface CompiledRoute {
  readonly def: RouteDef
  readonly checkParams: Check | undefined
  readonly checkQuery: ((query: URLSearchParams) => Record<string, unknown>) | undefined
  readonly checkBody: Check | undefined
}

export interface RouteMatch {
  readonly route: CompiledRoute
  readonly params: Record<string, string>
}

const methods: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

/**
 * find-my-way lookups plus what it does not do for us: HEAD answered by GET
 * routes, and the list of methods a path does accept (for 405's Allow).
 */
export class Router {
  readonly #fmw = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: 500 })
  readonly #routes: CompiledRoute[] = []

  add(def: RouteDef): void {
    const route: CompiledRoute = {
      def,
      checkParams: def.params && compileBodyCheck(def.params, 'params'),
      checkQuery: def.query && compileQueryCheck(def.query),
      checkBody: def.body && compileBodyCheck(def.body, 'body'),
    }
    // A duplicate route is a programming error: find-my-way throws at start-up.
    this.#fmw.on(def.method, def.path, () => {}, route)
    this.#routes.push(route)
  }

  get routes(): readonly CompiledRoute[] {
    return this.#routes
  }

  find(method: string, path: string): RouteMatch | undefined {
    const found = this.#fmw.find((method === 'HEAD' ? 'GET' : method) as HttpMethod, path)
    if (found === null) return undefined
    return { route: found.store as CompiledRoute, params: found.params as Record<string, string> }
  }

  allowedMethods(path: string): HttpMethod[] {
    return methods.filter((method) => this.#fmw.find(method, path) !== null)
  }
}
