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
  /** the rest again, split: the conjuncts that read one property (`name:x`, `!name:x`), tested on its value, and the others, on the record */
  readonly restOnValues: readonly ValueTest[]
  readonly restOnRecord: FilterPredicate | undefined
}

/** A conjunct that reads one property of the record: it holds when `test` holds for `record[name]`. */
export interface ValueTest {
  readonly name: string
  readonly test: FilterPredicate
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
    const onRecord = others.filter((other) => valueTest(other) === undefined)
    terms.push({
      name: conjunct.name,
      test: compileNode(conjunct.child),
      rest: compileNode(conjunctionOf(others)),
      restOnValues: others.flatMap((other) => valueTest(other) ?? []),
      restOnRecord: onRecord.length === 0 ? undefined : compileNode(conjunctionOf(onRecord)),
    })
  })
  return { predicate: compileNode(node), terms }
}

/** Records are objects, so `name:x` on one is x on its value, and `!name:x` is not x on it. */
function valueTest(node: FilterNode): ValueTest | undefined {
  if (node.type === 'property') return { name: node.name, test: compileNode(node.child) }
  if (node.type === 'not' && node.child.type === 'property') {
    const child = compileNode(node.child.child)
    return { name: node.child.name, test: (value) => !child(value) }
  }
  return undefined
}

function conjunctionOf(nodes: readonly FilterNode[]): FilterNode {
  const [first] = nodes
  if (first === undefined) return { type: 'null' }
  return nodes.length === 1 ? first : { type: 'and', children: nodes }
}
