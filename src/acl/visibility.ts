import { LRUCache } from 'lru-cache'
import { parseFilter, type FilterNode } from '../filter/index.js'
import { actionCovers, PrivilegeSet, type Effect, type Rule } from './evaluate.js'

/** A condition every record a selector matches meets: its `property` holds `needle` (lower case) in some string. */
export interface IndexTerm {
  readonly property: string
  readonly needle: string
}

/**
 * What one set of read privileges on a resource shows. Every user whose
 * privileges read the resource through the same allow and deny selectors
 * gets the same object, so a stream's frames are made and judged once for
 * all of them, and one decision per record serves them all.
 */
export interface Visibility {
  /** the canonical privilege set: equal for equal sets, whoever holds them */
  readonly key: string
  readonly visible: (record: object) => boolean
  /**
   * Terms one of which every visible record meets, so that a change need not
   * be judged for this visibility when its records meet none; undefined when
   * some allow selector gives no such term.
   */
  readonly terms: readonly IndexTerm[] | undefined
}

/** The terms one of which every record `node` matches meets, when the filter says so plainly. */
export function termsOf(node: FilterNode): IndexTerm[] | undefined {
  switch (node.type) {
    case 'property':
      // A string value matches as a case-insensitive substring, in the property or any string nested in it.
      return node.child.type === 'string' && node.child.value !== '' ? [{ property: node.name, needle: node.child.value.toLowerCase() }] : undefined
    case 'and':
      // Any child's condition is necessary; the first will do.
      for (const child of node.children) {
        const terms = termsOf(child)
        if (terms !== undefined) return terms
      }
      return undefined
    case 'or': {
      const all: IndexTerm[] = []
      for (const child of node.children) {
        const terms = termsOf(child)
        if (terms === undefined) return undefined
        all.push(...terms)
      }
      return all.length === 0 ? undefined : all
    }
    default:
      return undefined
  }
}

function visibilityOf(key: string, resource: string, rules: ReadonlyArray<readonly [effect: Effect, selector: string]>): Visibility {
  const records: Rule[] = rules.map(([effect, selector], index) => ({ id: String(index), resource, action: 'read', effect, selector }))
  const set = new PrivilegeSet(records)
  let terms: IndexTerm[] | undefined = []
  for (const [effect, selector] of rules) {
    if (effect !== 'allow' || terms === undefined) continue
    const found = selector === '' ? undefined : termsOf(parseFilter(selector))
    terms = found === undefined ? undefined : [...terms, ...found]
  }
  return { key, visible: set.predicate(resource, 'read'), terms }
}

/** The shared visibilities of the users of this process. */
export class Visibilities {
  // Distinct privilege sets are few (one per combination of roles in use); a bound keeps a churn of them in check.
  readonly #shared = new LRUCache<string, Visibility>({ max: 10_000 })
  readonly #ofScope = new WeakMap<PrivilegeSet, Map<string, Visibility>>()

  /** What a user with these privileges may read of `resource`. */
  of(scope: PrivilegeSet, resource: string): Visibility {
    let known = this.#ofScope.get(scope)
    if (known === undefined) this.#ofScope.set(scope, (known = new Map()))
    const cached = known.get(resource)
    if (cached !== undefined) return cached
    const canonical = new Map<string, readonly [Effect, string]>()
    for (const rule of scope.rulesOn(resource)) {
      if (!actionCovers(rule.action, 'read')) continue
      const pair = [rule.effect, rule.selector ?? ''] as const
      canonical.set(JSON.stringify(pair), pair)
    }
    const names = [...canonical.keys()].sort()
    const key = `${resource}:[${names.join(',')}]`
    let visibility = this.#shared.get(key)
    if (visibility === undefined) {
      visibility = visibilityOf(key, resource, names.map((name) => canonical.get(name) as readonly [Effect, string]))
      this.#shared.set(key, visibility)
    }
    known.set(resource, visibility)
    return visibility
  }
}
