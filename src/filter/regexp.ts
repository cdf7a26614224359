import type { RegExpNode } from './ast.js'

// Parsing must build the RegExp to reject bad patterns; keeping it lets the
// compiler reuse it instead of building it a second time. Sharing one RegExp
// between predicates is safe because the `g`/`y` flags (stateful lastIndex)
// are never allowed.
const cache = new WeakMap<RegExpNode, RegExp>()

/** Throws the engine's SyntaxError for an invalid pattern. */
export function regExpOf(node: RegExpNode): RegExp {
  let re = cache.get(node)
  if (re === undefined) {
    re = new RegExp(node.pattern, node.flags)
    cache.set(node, re)
  }
  return re
}
