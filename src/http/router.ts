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
  /** frozen when a connection's repeated request line shares it (connection-routes.ts) */
  readonly params: Readonly<Record<string, string>>
}

/** The routes of one method and path whose last segment is `:param.extension`, by extension. */
interface Suffixed {
  readonly param: string
  readonly byExtension: Map<string, CompiledRoute>
}

const methods: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
/** `/vms/:id.xva`: the path up to the parameter, its name, the extension. */
const SUFFIXED_PATH = /^(.*\/):(\w+)\.(\w+)$/

const routerOptions = { ignoreTrailingSlash: true, maxParamLength: 500 }

/**
 * find-my-way lookups plus what it does not do for us: HEAD answered by GET
 * routes, and the list of methods a path does accept (for 405's Allow).
 *
 * Routes ending in `:param.extension` (disk and VM streams) live in a second
 * tree as one `:param` route whose value is split at its last dot here:
 * find-my-way makes such a segment a regular expression, which every lookup
 * of the plain `:param` route beside it then ran (a 75 ns lookup became 255).
 * A path with a dot is looked up there first, as find-my-way ranked them.
 */
export class Router {
  readonly #fmw = FindMyWay(routerOptions)
  readonly #suffixedFmw = FindMyWay(routerOptions)
  readonly #suffixed = new Map<string, Suffixed>()
  readonly #routes: CompiledRoute[] = []

  add(def: RouteDef): void {
    const route: CompiledRoute = {
      def,
      checkParams: def.params && compileBodyCheck(def.params, 'params'),
      checkQuery: def.query && compileQueryCheck(def.query),
      checkBody: def.body && compileBodyCheck(def.body, 'body'),
    }
    this.#routes.push(route)
    const suffixed = SUFFIXED_PATH.exec(def.path)
    // A duplicate route is a programming error: find-my-way throws at start-up.
    if (suffixed === null) return this.#fmw.on(def.method, def.path, () => {}, route)
    const [, prefix = '', param = '', extension = ''] = suffixed
    const base = `${prefix}:${param}`
    const key = `${def.method} ${base}`
    let entry = this.#suffixed.get(key)
    if (entry === undefined) {
      entry = { param, byExtension: new Map() }
      this.#suffixed.set(key, entry)
      this.#suffixedFmw.on(def.method, base, () => {}, entry)
    }
    if (entry.param !== param || entry.byExtension.has(extension)) throw new Error(`route ${def.method} ${def.path} conflicts with another`)
    entry.byExtension.set(extension, route)
  }

  get routes(): readonly CompiledRoute[] {
    return this.#routes
  }

  find(method: string, path: string): RouteMatch | undefined {
    const key = (method === 'HEAD' ? 'GET' : method) as HttpMethod
    if (path.includes('.')) {
      const match = this.#findSuffixed(key, path)
      if (match !== undefined) return match
    }
    const found = this.#fmw.find(key, path)
    if (found === null) return undefined
    return { route: found.store as CompiledRoute, params: found.params as Record<string, string> }
  }

  allowedMethods(path: string): HttpMethod[] {
    return methods.filter((method) => this.find(method, path) !== undefined)
  }

  #findSuffixed(method: HttpMethod, path: string): RouteMatch | undefined {
    const found = this.#suffixedFmw.find(method, path)
    if (found === null) return undefined
    const { param, byExtension } = found.store as Suffixed
    const params = found.params as Record<string, string>
    const value = params[param] ?? ''
    const dot = value.lastIndexOf('.')
    const route = dot > 0 ? byExtension.get(value.slice(dot + 1)) : undefined
    if (route === undefined) return undefined
    return { route, params: { ...params, [param]: value.slice(0, dot) } }
  }
}
