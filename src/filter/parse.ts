import type { ComparisonOperator, FilterNode } from './ast.js'
import { isGlobChar, isNumericToken, isRawChar } from './chars.js'
import { filterTooComplex, MAX_FILTER_LENGTH } from './cost.js'
import { FilterSyntaxError } from './errors.js'
import { regExpOf } from './regexp.js'

/**
 * Terms nested deeper than this are rejected, so a hostile filter such as
 * `!!!!…` cannot exhaust the stack while parsing, matching or formatting.
 */
export const MAX_NESTING_DEPTH = 100

const WHITESPACE = /\s*/y
const REGEXP_FLAG_LIKE = /^[A-Za-z]$/

/**
 * Parses complex-matcher syntax by deterministic recursive descent. XO's PEG
 * backtracks, but once one of its alternatives fails after consuming input,
 * what remains starts with a character no rule accepts there, so backtracking
 * never rescues a parse: the language is the same, and errors can point where
 * the input went wrong rather than where the term list stopped. Two deliberate
 * deviations: letters right after a regexp are refused as flags (XO read
 * `/x/g` as `/x/ g`), and a backslash in a regexp escapes exactly the next
 * character (XO's scanner took `/a\\/` as unterminated and `/\/` as complete).
 */
export function parseFilter(source: string): FilterNode {
  if (source.length > MAX_FILTER_LENGTH) {
    throw filterTooComplex(`it is ${source.length} characters long where ${MAX_FILTER_LENGTH} are allowed`, {
      limit: MAX_FILTER_LENGTH,
      actual: source.length,
    })
  }
  return new Parser(source).parseQuery()
}

class Parser {
  readonly #source: string
  #pos = 0

  constructor(source: string) {
    this.#source = source
  }

  parseQuery(): FilterNode {
    this.#skipWhitespace()
    const terms: FilterNode[] = []
    while (this.#pos < this.#source.length) {
      terms.push(this.#parseTerm(0, 'a term or end of input'))
    }
    return terms.length === 0 ? { type: 'null' } : group('and', terms)
  }

  /** `expected` describes what the caller accepts here, for the error message. */
  #parseTerm(depth: number, expected: string): FilterNode {
    if (depth > MAX_NESTING_DEPTH) {
      throw new FilterSyntaxError(this.#source, this.#pos, `at most ${MAX_NESTING_DEPTH} levels of nesting`, { data: { limit: MAX_NESTING_DEPTH } })
    }
    const node = this.#parseTermBody(depth, expected)
    this.#skipWhitespace()
    return node
  }

  #parseTermBody(depth: number, expected: string): FilterNode {
    const c = this.#peek()
    switch (c) {
      case '(':
        ++this.#pos
        this.#skipWhitespace()
        return group('and', this.#parseGroupTerms(depth))
      case '|':
        ++this.#pos
        this.#skipWhitespace()
        if (this.#peek() !== '(') throw this.#error("'('")
        ++this.#pos
        this.#skipWhitespace()
        return group('or', this.#parseGroupTerms(depth))
      case '!':
        ++this.#pos
        this.#skipWhitespace()
        return { type: 'not', child: this.#parseTerm(depth + 1, 'a term') }
      case '<':
      case '>':
        return this.#parseComparison()
      case '"': {
        const value = this.#parseQuotedString()
        return this.#parsePropertyOr(value, depth, { type: 'string', value })
      }
      case '/':
        return this.#parseRegExp()
    }
    if (isGlobChar(c)) {
      const token = this.#readWhile(isGlobChar)
      if (token.includes('*')) return { type: 'glob', pattern: token }
      const value: FilterNode = isNumericToken(token)
        ? { type: 'numberOrString', value: token }
        : { type: 'string', value: token }
      return this.#parsePropertyOr(token, depth, value)
    }
    throw this.#error(expected)
  }

  /** After `(` or `|(`: one or more terms, then `)`. */
  #parseGroupTerms(depth: number): FilterNode[] {
    const terms = [this.#parseTerm(depth + 1, 'a term')]
    // At end of input #peek() is '', so the next term reports the missing ')'.
    while (this.#peek() !== ')') terms.push(this.#parseTerm(depth + 1, "a term or ')'"))
    ++this.#pos
    return terms
  }

  /** A property name was read: it is `name:term`, `name?`, or just a value. */
  #parsePropertyOr(name: string, depth: number, value: FilterNode): FilterNode {
    if (this.#peek() === '?') {
      ++this.#pos
      return { type: 'truthy', name }
    }
    const afterName = this.#pos
    this.#skipWhitespace()
    if (this.#peek() === ':') {
      ++this.#pos
      this.#skipWhitespace()
      return { type: 'property', name, child: this.#parseTerm(depth + 1, 'a term') }
    }
    this.#pos = afterName
    return value
  }

  #parseComparison(): FilterNode {
    let operator: ComparisonOperator = this.#peek() === '<' ? '<' : '>'
    ++this.#pos
    if (this.#peek() === '=') {
      operator = operator === '<' ? '<=' : '>='
      ++this.#pos
    }
    const start = this.#pos
    const token = this.#readWhile(isRawChar)
    const value = Number(token)
    if (token === '' || Number.isNaN(value)) {
      this.#pos = start
      throw this.#error('a number')
    }
    return { type: 'comparison', operator, value }
  }

  /** An unterminated string runs to the end of input, as in XO. */
  #parseQuotedString(): string {
    const source = this.#source
    let pos = this.#pos + 1
    let value = ''
    let chunkStart = pos
    while (pos < source.length) {
      const c = source.charAt(pos)
      if (c === '"') {
        this.#pos = pos + 1
        return value + source.slice(chunkStart, pos)
      }
      if (c === '\\') {
        value += source.slice(chunkStart, pos)
        // The escaped character starts the next chunk.
        chunkStart = pos + 1
        pos += 2
      } else {
        ++pos
      }
    }
    this.#pos = source.length
    // XO also rejects a final lone backslash: it escapes nothing.
    if (pos > source.length) throw this.#error('a character after \\')
    return value + source.slice(chunkStart)
  }

  #parseRegExp(): FilterNode {
    const source = this.#source
    const start = this.#pos
    let pos = start + 1
    while (pos < source.length) {
      const c = source.charAt(pos)
      if (c === '/') break
      pos += c === '\\' ? 2 : 1
    }
    if (pos >= source.length) {
      this.#pos = source.length
      throw this.#error("'/'")
    }
    const pattern = source.slice(start + 1, pos)
    this.#pos = pos + 1
    let flags: '' | 'i' = ''
    if (this.#peek() === 'i') {
      flags = 'i'
      ++this.#pos
    }
    // XO would silently read `/x/g` as `/x/ g`; refusing is less surprising.
    if (REGEXP_FLAG_LIKE.test(this.#peek())) throw this.#error('no regexp flag other than i')
    const node: FilterNode = { type: 'regexp', pattern, flags }
    try {
      regExpOf(node)
    } catch (cause) {
      // RE2's message names the construct it refuses (`invalid perl operator: (?=`, `invalid escape sequence: \1`).
      const reason = cause instanceof Error ? cause.message : String(cause)
      throw new FilterSyntaxError(source, start, 'a valid regexp', { cause, data: { reason } })
    }
    return node
  }

  #readWhile(accept: (c: string) => boolean): string {
    const source = this.#source
    const start = this.#pos
    let pos = start
    while (pos < source.length && accept(source.charAt(pos))) ++pos
    this.#pos = pos
    return source.slice(start, pos)
  }

  /** The current character, or '' at end of input. */
  #peek(): string {
    return this.#source.charAt(this.#pos)
  }

  #skipWhitespace(): void {
    WHITESPACE.lastIndex = this.#pos
    WHITESPACE.test(this.#source)
    this.#pos = WHITESPACE.lastIndex
  }

  #error(expected: string): FilterSyntaxError {
    return new FilterSyntaxError(this.#source, this.#pos, expected)
  }
}

/** Like XO, a group of one term is that term. */
function group(type: 'and' | 'or', terms: FilterNode[]): FilterNode {
  const [first] = terms
  return terms.length === 1 && first !== undefined ? first : { type, children: terms }
}
