export type {
  AndNode,
  ComparisonNode,
  ComparisonOperator,
  FilterNode,
  GlobNode,
  NotNode,
  NullNode,
  NumberOrStringNode,
  OrNode,
  PropertyNode,
  RegExpNode,
  StringNode,
  TruthyNode,
} from './ast.js'
export { FilterSyntaxError } from './errors.js'
export { compileFilter, matches } from './match.js'
export type { FilterPredicate } from './match.js'
export { formatFilter } from './format.js'
export { planFilter } from './plan.js'
export type { FilterPlan, PropertyTerm, ValueTest } from './plan.js'
export { MAX_NESTING_DEPTH, parseFilter } from './parse.js'
export { filterCost, MAX_FILTER_COST, MAX_FILTER_LENGTH } from './cost.js'
