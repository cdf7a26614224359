import type { FilterNode } from './ast.js'
import { isGlobPattern, isNumericToken, isRawString } from './chars.js'
import { regExpOf } from './regexp.js'

/**
 * Turns an AST back into filter text that parses to an equivalent AST. Nodes
 * the syntax cannot express (only possible when built by hand: empty groups,
 * a nested match-all, malformed tokens) throw a TypeError.
 */
export function formatFilter(node: FilterNode): string {
  return node.type === 'null' ? '' : format(node, false)
}

/** `nested`: the node is an operand (of `!`, `:` or a group), so a conjunction needs parentheses. */
function format(node: FilterNode, nested: boolean): string {
  switch (node.type) {
    case 'null':
      throw unformattable(node, 'match-all can only be the whole filter')
    case 'and':
      return formatGroup(node, nested ? '(' : '', nested ? ')' : '')
    case 'or':
      return formatGroup(node, '|(', ')')
    case 'not':
      return '!' + format(node.child, true)
    case 'property':
      return formatString(node.name) + ':' + format(node.child, true)
    case 'truthy':
      return formatString(node.name) + '?'
    case 'comparison':
      return node.operator + formatNumber(node)
    case 'string':
      return formatString(node.value)
    case 'numberOrString':
      if (!isRawString(node.value) || !isNumericToken(node.value)) throw unformattable(node, 'not a raw number')
      return node.value
    case 'glob':
      if (!isGlobPattern(node.pattern)) throw unformattable(node, 'not raw characters and stars')
      return node.pattern
    case 'regexp':
      try {
        regExpOf(node)
      } catch (cause) {
        throw unformattable(node, 'invalid pattern', cause)
      }
      return '/' + node.pattern.replace(/\\[\s\S]|\//g, (m) => (m === '/' ? '\\/' : m)) + '/' + node.flags
  }
}

function formatGroup(node: FilterNode & { children: readonly FilterNode[] }, open: string, close: string): string {
  const { children } = node
  const [first] = children
  if (first === undefined) throw unformattable(node, 'empty group')
  // A group of one parses back to its only term, so write just that term.
  if (children.length === 1) return format(first, true)
  return open + children.map((child) => format(child, true)).join(' ') + close
}

/** Raw when that reads back as the same string; numeric-looking text is quoted so it stays a string. */
function formatString(value: string): string {
  return isRawString(value) && !isNumericToken(value) ? value : `"${value.replace(/[\\"]/g, '\\$&')}"`
}

function formatNumber(node: FilterNode & { value: number }): string {
  const { value } = node
  if (Number.isNaN(value)) throw unformattable(node, 'NaN')
  // `+` is not a raw character, and `-0` must survive the round trip.
  return Object.is(value, -0) ? '-0' : String(value).replace('e+', 'e')
}

function unformattable(node: FilterNode, why: string, cause?: unknown): TypeError {
  return new TypeError(`cannot format ${node.type} filter node: ${why}`, { cause })
}
