/**
 * The filter AST is plain, JSON-serialisable data so it can be stored (ACL
 * selectors), compared in tests and rebuilt programmatically; behaviour lives
 * in match.ts and format.ts.
 */

export type ComparisonOperator = '>' | '>=' | '<' | '<='

/** Match-all: what an empty (or blank) filter parses to. */
export interface NullNode {
  readonly type: 'null'
}

export interface AndNode {
  readonly type: 'and'
  readonly children: readonly FilterNode[]
}

export interface OrNode {
  readonly type: 'or'
  readonly children: readonly FilterNode[]
}

export interface NotNode {
  readonly type: 'not'
  readonly child: FilterNode
}

/** `name:child` — applies `child` to `value[name]`, without iterating arrays. */
export interface PropertyNode {
  readonly type: 'property'
  readonly name: string
  readonly child: FilterNode
}

/** `name?` */
export interface TruthyNode {
  readonly type: 'truthy'
  readonly name: string
}

/** `>n`, `>=n`, `<n`, `<=n` */
export interface ComparisonNode {
  readonly type: 'comparison'
  readonly operator: ComparisonOperator
  readonly value: number
}

/** Case-insensitive substring, from a quoted string or a raw word. */
export interface StringNode {
  readonly type: 'string'
  readonly value: string
}

/**
 * A raw numeric token such as `32` or `1e3`, kept as written: it matches the
 * number it denotes or, as text, a substring.
 */
export interface NumberOrStringNode {
  readonly type: 'numberOrString'
  readonly value: string
}

/** A raw word containing `*` wildcards. */
export interface GlobNode {
  readonly type: 'glob'
  readonly pattern: string
}

/** `/pattern/flags`; `pattern` is the text between the slashes, escapes included. */
export interface RegExpNode {
  readonly type: 'regexp'
  readonly pattern: string
  readonly flags: '' | 'i'
}

export type FilterNode =
  | NullNode
  | AndNode
  | OrNode
  | NotNode
  | PropertyNode
  | TruthyNode
  | ComparisonNode
  | StringNode
  | NumberOrStringNode
  | GlobNode
  | RegExpNode
