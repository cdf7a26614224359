import RE2 from 're2'
import type { RegExpNode } from './ast.js'

// Parsing must build the regexp to reject bad patterns; keeping it lets the
// compiler reuse it instead of building it a second time. Sharing one between
// predicates is safe because the `g`/`y` flags (stateful lastIndex) are never
// allowed.
const cache = new WeakMap<RegExpNode, RegExp>()

/**
 * User-written patterns run on RE2, whose matching time is linear in the
 * input: no pattern can make a listing (or an access-control selector)
 * backtrack for ever. Throws RE2's SyntaxError for what it cannot compile
 * (backreferences, lookarounds), naming the construct.
 */
export function linearRegExp(pattern: string, flags: '' | 'i'): RegExp {
  return new RE2(pattern, flags)
}

export function regExpOf(node: RegExpNode): RegExp {
  let re = cache.get(node)
  if (re === undefined) {
    re = linearRegExp(node.pattern, node.flags)
    cache.set(node, re)
  }
  return re
}
