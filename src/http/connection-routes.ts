import type { Router, RouteMatch } from './router.js'

/** Where a request target leads: its path, its query text and the route it matched, if any. */
export interface Routed {
  readonly path: string
  readonly queryText: string
  readonly match: RouteMatch | undefined
}

interface Remembered extends Routed {
  readonly method: string
  readonly target: string
  /** whether this line came at least twice, its match then shared and frozen */
  readonly repeated: boolean
}

/**
 * Routes request targets, remembering each connection's last one: a client polling one URL over a
 * keep-alive connection (a dashboard, a script waiting on a task, a benchmark) is routed once.
 * Routes are fixed once the server starts, so a request line always leads where it led before.
 * A line that changes pays one comparison more.
 *
 * Measured (bench/RESULTS.md, 2026-11-26, node 20.20.2): a repeated single-object read costs
 * 2,300 instructions less without find-my-way's lookup, and 1,300 less again with its
 * parameter values copied flat (see `flatCopy`).
 */
export class ConnectionRoutes {
  readonly #router: Router
  readonly #last = new WeakMap<object, Remembered>()

  constructor(router: Router) {
    this.#router = router
  }

  route(connection: object, method: string, target: string): Routed {
    const last = this.#last.get(connection)
    if (last !== undefined && last.target === target && last.method === method) {
      if (last.repeated) return last
      // Every later request of this line shares one match: frozen, so that no handler can change
      // what the next one receives.
      const shared: Remembered = { ...last, match: last.match && shareable(last.match), repeated: true }
      this.#last.set(connection, shared)
      return shared
    }
    const queryStart = target.indexOf('?')
    const path = queryStart === -1 ? target : target.slice(0, queryStart)
    const queryText = queryStart === -1 ? '' : target.slice(queryStart + 1)
    const routed: Remembered = { method, target, path, queryText, match: this.#router.find(method, path), repeated: false }
    if (routed.match !== undefined) this.#last.set(connection, routed)
    return routed
  }
}

/**
 * A parameter value as a flat string of its own. find-my-way cuts values out of the path, and V8
 * keeps such a cut (13 characters or more) as a view of the path: each map lookup by it then
 * compares it through V8's runtime, 1,300 instructions of a single-object read.
 */
const flatCopy = (text: string): string => Buffer.from(text, 'utf16le').toString('utf16le')

function shareable(match: RouteMatch): RouteMatch {
  const params: Record<string, string> = {}
  for (const [name, value] of Object.entries(match.params)) params[name] = flatCopy(value)
  return Object.freeze({ route: match.route, params: Object.freeze(params) })
}
