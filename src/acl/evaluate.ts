import { compileFilter, type FilterPredicate } from '../filter/index.js'

export type Effect = 'allow' | 'deny'

/** A privilege as evaluation needs it (records carry more, such as `roleId`). */
export interface Rule {
  readonly id: string
  readonly resource: string
  readonly action: string
  readonly effect: Effect
  readonly selector?: string | undefined
}

export interface Decision {
  readonly allowed: boolean
  /** ids of the privileges that match the request */
  readonly matched: readonly string[]
  /** the matching `deny` privileges, which win over any `allow` */
  readonly denying: readonly string[]
}

/**
 * Whether a granted action covers a requested one: `*` covers all, a parent
 * covers its children (`shutdown` covers `shutdown:clean`), never the reverse
 * nor a sibling.
 */
export function actionCovers(granted: string, requested: string): boolean {
  return granted === '*' || granted === requested || requested.startsWith(`${granted}:`)
}

// Rules are immutable records: each one's selector is compiled once, for as long as the rule lives.
const predicates = new WeakMap<Rule, FilterPredicate>()

function selectorMatches(rule: Rule, object: unknown): boolean {
  if (rule.selector === undefined || rule.selector === '') return true
  if (object === undefined) return false
  let predicate = predicates.get(rule)
  if (predicate === undefined) {
    predicate = compileFilter(rule.selector)
    predicates.set(rule, predicate)
  }
  return predicate(object)
}

/**
 * The effective privileges of one non-administrator, indexed by resource.
 * Deny by default; a matching `deny` wins over any `allow`; selectors are
 * evaluated against the live object, so a changed tag changes scope at once.
 */
let serial = 0

export class PrivilegeSet {
  readonly #byResource = new Map<string, Rule[]>()
  readonly #predicates = new Map<string, (object: object) => boolean>()
  /** tells this set from every other in this process: what was derived from one set (a listing) belongs to it alone */
  readonly key = `scope-${++serial}`

  constructor(rules: Iterable<Rule>) {
    for (const rule of rules) {
      const list = this.#byResource.get(rule.resource)
      if (list === undefined) this.#byResource.set(rule.resource, [rule])
      else list.push(rule)
    }
  }

  /** The privileges on one resource, as granted. */
  rulesOn(resource: string): readonly Rule[] {
    return this.#byResource.get(resource) ?? []
  }

  /** Whether the action is allowed on the object (or, without one, on the resource as a whole). */
  allows(resource: string, action: string, object?: unknown): boolean {
    let allowed = false
    for (const rule of this.#byResource.get(resource) ?? []) {
      if (!actionCovers(rule.action, action) || !selectorMatches(rule, object)) continue
      if (rule.effect === 'deny') return false
      allowed = true
    }
    return allowed
  }

  /**
   * `allows` for one resource and action as a predicate over records, each
   * decision kept for as long as the record object lives: records are
   * immutable and so is this set, so a listing repeated before either changes
   * evaluates no selector again.
   */
  predicate(resource: string, action: string): (object: object) => boolean {
    const key = `${resource}\0${action}`
    let predicate = this.#predicates.get(key)
    if (predicate === undefined) {
      const decisions = new WeakMap<object, boolean>()
      predicate = (object) => {
        let allowed = decisions.get(object)
        if (allowed === undefined) {
          allowed = this.allows(resource, action, object)
          decisions.set(object, allowed)
        }
        return allowed
      }
      this.#predicates.set(key, predicate)
    }
    return predicate
  }

  /** The same decision, with the privileges that made it (for access reviews). */
  decide(resource: string, action: string, object?: unknown): Decision {
    const matched: string[] = []
    const denying: string[] = []
    for (const rule of this.#byResource.get(resource) ?? []) {
      if (!actionCovers(rule.action, action) || !selectorMatches(rule, object)) continue
      matched.push(rule.id)
      if (rule.effect === 'deny') denying.push(rule.id)
    }
    return { allowed: matched.length > 0 && denying.length === 0, matched, denying }
  }

  /**
   * Whether some privilege could allow the action, or one of its children
   * (a PATCH needs `update:<field>` only for the fields it sends), on some
   * object of the resource: when none can, the route is refused up front.
   */
  mayAllow(resource: string, action: string): boolean {
    return (this.#byResource.get(resource) ?? []).some(
      (rule) => rule.effect === 'allow' && (actionCovers(rule.action, action) || actionCovers(action, rule.action)),
    )
  }
}
