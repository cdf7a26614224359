import { KeelError } from '../errors.js'
import type { FilterNode } from './ast.js'

/** Longer filters are refused before parsing. */
export const MAX_FILTER_LENGTH = 2048

/**
 * What a filter may cost, in units of one term on one property. Measured on
 * 10,000 VMs (bench/RESULTS.md): a plain term on a property costs about 1 ms,
 * a pattern on a property 4, a plain term searching the whole object 16, and
 * a pattern searching the whole object 128 (it tests every string the record
 * holds). The limit keeps the worst accepted filter over such a listing well
 * under a second, whatever it combines.
 */
export const MAX_FILTER_COST = 160

const COST = { plain: 1, pattern: 4, wholePlain: 16, wholePattern: 128 } as const

/** The cost of evaluating a filter once per object, in the units above. */
export function filterCost(node: FilterNode, onProperty = false): number {
  switch (node.type) {
    case 'null':
      return 0
    case 'and':
    case 'or':
      return node.children.reduce((sum, child) => sum + filterCost(child, onProperty), 0)
    case 'not':
      return filterCost(node.child, onProperty)
    case 'property':
      return filterCost(node.child, true)
    case 'truthy':
    case 'comparison':
      return COST.plain
    case 'string':
    case 'numberOrString':
      return onProperty ? COST.plain : COST.wholePlain
    case 'glob':
    case 'regexp':
      return onProperty ? COST.pattern : COST.wholePattern
  }
}

export const filterTooComplex = (what: string, data: { limit: number; actual: number }): KeelError =>
  new KeelError('FILTER_TOO_COMPLEX', `filter is too complex: ${what}`, data)

/** Refuses a filter whose evaluation could take too long, naming the limit. */
export function checkFilterCost(node: FilterNode): void {
  const actual = filterCost(node)
  if (actual > MAX_FILTER_COST) {
    throw filterTooComplex(
      `it costs ${actual} units where ${MAX_FILTER_COST} are allowed (a term on a property costs ${COST.plain}, a pattern on a property ${COST.pattern}, a term on the whole object ${COST.wholePlain}, a pattern on the whole object ${COST.wholePattern})`,
      { limit: MAX_FILTER_COST, actual },
    )
  }
}
