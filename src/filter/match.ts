import type { ComparisonNode, FilterNode } from './ast.js'
import { checkFilterCost } from './cost.js'
import { asciiIndexOf, isAscii, NOT_ASCII } from './fold.js'
import { parseFilter } from './parse.js'
import { linearRegExp, regExpOf } from './regexp.js'

export type FilterPredicate = (value: unknown) => boolean

/** Parses once, refuses what would cost too much, and returns a predicate whose needles and regexps are prepared up front. */
export function compileFilter(source: string): FilterPredicate {
  const node = parseFilter(source)
  checkFilterCost(node)
  return compileNode(node)
}

// Nodes are immutable data, so a node's predicate can be built once and reused
// by every later matches() call on it.
const predicates = new WeakMap<FilterNode, FilterPredicate>()

export function matches(node: FilterNode, value: unknown): boolean {
  let predicate = predicates.get(node)
  if (predicate === undefined) {
    predicate = compileNode(node)
    predicates.set(node, predicate)
  }
  return predicate(value)
}

const matchAll: FilterPredicate = () => true

/** A node's predicate, built once: needles lowered and regexps made up front. */
export function compileNode(node: FilterNode): FilterPredicate {
  switch (node.type) {
    case 'null':
      return matchAll
    case 'and': {
      const children = node.children.map(compileNode)
      return (value) => {
        for (let i = 0; i < children.length; ++i) if (!children[i]!(value)) return false
        return true
      }
    }
    case 'or': {
      const children = node.children.map(compileNode)
      return (value) => {
        for (let i = 0; i < children.length; ++i) if (children[i]!(value)) return true
        return false
      }
    }
    case 'not': {
      const child = compileNode(node.child)
      return (value) => !child(value)
    }
    case 'property': {
      const { name } = node
      const child = compileNode(node.child)
      // Deliberately no array iteration here, so `VIFs:length:>=2` reads the array's length.
      return (value) => value != null && child((value as Record<string, unknown>)[name])
    }
    case 'truthy': {
      const { name } = node
      return (value) => value != null && Boolean((value as Record<string, unknown>)[name])
    }
    case 'comparison':
      return compileComparison(node)
    case 'string': {
      const contains = containsIgnoringCase(node.value)
      const match: FilterPredicate = (value) => (typeof value === 'string' ? contains(value) : someNested(value, match))
      return match
    }
    case 'numberOrString': {
      const number = Number(node.value)
      const contains = containsIgnoringCase(node.value)
      const match: FilterPredicate = (value) =>
        value === number || (typeof value === 'string' ? contains(value) : someNested(value, match))
      return match
    }
    case 'glob':
      return globPredicate(node.pattern)
    case 'regexp':
      return regExpPredicate(regExpOf(node))
  }
}

/** Texts up to this length are searched in place (fold.ts). */
const IN_PLACE_MAX = 32

/** Whether a text contains `term`, case aside, as `text.toLowerCase().includes(term.toLowerCase())` says. */
function containsIgnoringCase(term: string): (text: string) => boolean {
  const needle = term.toLowerCase()
  if (!isAscii(needle)) return (text) => text.toLowerCase().includes(needle)
  return (text) => {
    // Past a few dozen characters the engine's own search of the lowered copy is faster.
    if (text.length > IN_PLACE_MAX) return text.toLowerCase().includes(needle)
    const found = asciiIndexOf(text, needle, 0)
    return found === NOT_ASCII ? text.toLowerCase().includes(needle) : found >= 0
  }
}

function regExpPredicate(re: RegExp): FilterPredicate {
  const match: FilterPredicate = (value) => (typeof value === 'string' ? re.test(value) : someNested(value, match))
  return match
}

/**
 * `*` is `.*`, everything else literal, case-insensitive and unanchored. As
 * the match is unanchored, leading, trailing and repeated stars add nothing,
 * and dropping them spares the engine a useless `.*` scan.
 *
 * On ASCII text of one line and an ASCII pattern, that is finding the parts
 * one after the other, leftmost first, which needs no regexp engine (calling
 * RE2 was most of a listing's time); any other text goes to RE2, whose case
 * folding and `.` (no newline) then decide.
 */
function globPredicate(pattern: string): FilterPredicate {
  const parts = pattern.split('*').filter((part) => part !== '')
  const re = linearRegExp(parts.map(escapeRegExp).join('.*'), 'i')
  const lowered = parts.map((part) => part.toLowerCase())
  const test =
    parts.every(isAscii) && lowered.every((part, i) => part.length === parts[i]?.length)
      ? (text: string): boolean => {
          if (text.includes('\n')) return re.test(text)
          let at = 0
          for (const part of lowered) {
            const found = asciiIndexOf(text, part, at)
            if (found === NOT_ASCII) return re.test(text)
            if (found < 0) return false
            at = found + part.length
          }
          return true
        }
      : (text: string): boolean => re.test(text)
  const match: FilterPredicate = (value) => (typeof value === 'string' ? test(value) : someNested(value, match))
  return match
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')
}

/**
 * XO compares with a plain `value > n`, so its coercions are kept: numeric
 * strings, `null` as 0, Dates, one-element arrays. Values whose coercion
 * throws (symbols, null-prototype objects, hostile valueOf) just don't match.
 */
function compileComparison({ operator, value: n }: ComparisonNode): FilterPredicate {
  const test = comparators[operator]
  return (value) => {
    switch (typeof value) {
      case 'number':
        return test(value, n)
      case 'object':
      case 'function':
        try {
          return test(value, n)
        } catch {
          return false
        }
      case 'symbol':
        return false
      default:
        return test(value, n)
    }
  }
}

// Given anything JS can compare, not just numbers: the coercion is the point.
const comparators: Record<ComparisonNode['operator'], (a: unknown, b: number) => boolean> = {
  '>': (a, b) => (a as number) > b,
  '>=': (a, b) => (a as number) >= b,
  '<': (a, b) => (a as number) < b,
  '<=': (a, b) => (a as number) <= b,
}

/** Value matchers recurse into arrays and plain objects: does any element or own value match? */
function someNested(value: unknown, match: FilterPredicate): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; ++i) if (match(value[i])) return true
    return false
  }
  if (isPlainObject(value)) {
    // for…in is much faster than Object.keys(); checking ownership only after a
    // hit keeps it cheap while still ignoring inherited (polluted) properties.
    for (const key in value) if (match(value[key]) && Object.hasOwn(value, key)) return true
  }
  return false
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === null || proto === Object.prototype
}
