import type { FilterNode } from './ast.js'
import { checkFilterCost } from './cost.js'
import { compileNode, type FilterPredicate } from './match.js'
import { parseFilter } from './parse.js'

/**
 * A top-level `name:term` of a filter, which an index of the values of
 * `name` can answer: a record matches the whole filter only if `test` holds
 * for `record[name]`, and then exactly when `rest` holds for the record.
 */
export interface PropertyTerm {
  readonly name: string
  readonly test: FilterPredicate
  readonly rest: FilterPredicate
}

export interface FilterPlan {
  /** the whole filter, on one record */
  readonly predicate: FilterPredicate
  /** the filter's top-level `name:term` conjuncts, any of which may narrow the records to test */
  readonly terms: readonly PropertyTerm[]
}

/** Like compileFilter (same errors, same answers), plus the terms an index may answer. */
export function planFilter(source: string): FilterPlan {
  const node = parseFilter(source)
  checkFilterCost(node)
  const conjuncts = node.type === 'and' ? node.children : [node]
  const terms: PropertyTerm[] = []
  conjuncts.forEach((conjunct, at) => {
    if (conjunct.type !== 'property') return
    const others = conjuncts.filter((_, i) => i !== at)
    terms.push({ name: conjunct.name, test: compileNode(conjunct.child), rest: compileNode(conjunctionOf(others)) })
  })
  return { predicate: compileNode(node), terms }
}

function conjunctionOf(nodes: readonly FilterNode[]): FilterNode {
  const [first] = nodes
  if (first === undefined) return { type: 'null' }
  return nodes.length === 1 ? first : { type: 'and', children: nodes }
}
