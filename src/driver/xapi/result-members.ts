import { decodeJsonRpcBody, JsonRpcParseError, type JsonRpcResponse } from '../../xapi/json-rpc.js'

/** What a call keeps of each member of an object result (a record of `get_all_records`), given its key. */
export type MemberReader = (key: string, value: unknown) => unknown

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c

/** Bytes of a value as they arrive: the pieces of earlier chunks, and where it starts in the current one. */
class Capture {
  parts: Buffer[] = []
  from: number | undefined

  start(at: number): void {
    this.parts = []
    this.from = at
  }

  /** The chunk ends while capturing: its part is kept, and the capture goes on at the next chunk's start. */
  carry(chunk: Buffer): void {
    if (this.from === undefined) return
    if (this.from < chunk.length) this.parts.push(chunk.subarray(this.from))
    this.from = 0
  }

  text(chunk: Buffer, end: number): string {
    const from = this.from ?? end
    this.from = undefined
    if (this.parts.length === 0) return chunk.toString('utf8', from, end)
    const text = Buffer.concat([...this.parts, chunk.subarray(from, end)]).toString('utf8')
    this.parts = []
    return text
  }
}

/**
 * A JSON-RPC reply read as it arrives, each member of an object result
 * parsed on its own and handed to `reader`: the reply's text is never held
 * whole, and a record `reader` trims dies young, its parts never promoted to
 * the old generation (issue 28: a 10,000-VM pool's replies, read whole, left
 * about 180 MiB of dead objects there, which made every later young
 * collection dearer). The scan follows strings and nesting only; whatever
 * is not JSON fails in `JSON.parse` of its parts or of the rest of the reply.
 */
export class ResultMembers {
  readonly #reader: MemberReader
  readonly #members: Record<string, unknown> = {}
  /** the reply outside the result's members, the result itself written `null` */
  readonly #rest = new Capture()
  readonly #member = new Capture()
  /** the last string at depth 1, decoded: the key of the value that follows */
  readonly #key = new Capture()
  #lastKey: string | undefined
  #depth = 0
  #inString = false
  #escaped = false
  #inResult = false
  #sawResult = false

  constructor(reader: MemberReader) {
    this.#reader = reader
    this.#rest.start(0)
  }

  write(chunk: Buffer): void {
    const length = chunk.length
    let backslash = chunk.indexOf(BACKSLASH)
    let i = 0
    while (i < length) {
      if (this.#inString) {
        if (this.#escaped) {
          this.#escaped = false
          i++
          continue
        }
        // Strings are most of a reply: the scan jumps to the next quote or backslash.
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i)
        const quote = chunk.indexOf(QUOTE, i)
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          this.#escaped = true
          i = backslash + 1
          continue
        }
        if (quote === -1) break
        this.#inString = false
        i = quote
        if (this.#depth === 1) this.#lastKey = this.#key.text(chunk, quote + 1)
        i++
        continue
      }
      const byte = chunk[i] as number
      if (byte === QUOTE) {
        this.#inString = true
        if (this.#depth === 1) this.#key.start(i)
        else if (this.#inResult && this.#depth === 2 && this.#member.from === undefined && this.#member.parts.length === 0) this.#member.start(i)
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        this.#depth++
        if (this.#depth === 2 && byte === OPEN_BRACE && this.#lastKey === '"result"' && !this.#sawResult) {
          this.#inResult = this.#sawResult = true
          this.#rest.parts.push(chunk.subarray(this.#rest.from ?? 0, i), Buffer.from('null'))
          this.#rest.from = undefined
        }
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        if (this.#inResult && this.#depth === 2) {
          this.#endMember(chunk, i)
          this.#inResult = false
          this.#rest.from = i + 1
        }
        this.#depth--
      } else if (byte === COMMA && this.#inResult && this.#depth === 2) this.#endMember(chunk, i)
      i++
    }
    this.#rest.carry(chunk)
    this.#member.carry(chunk)
    this.#key.carry(chunk)
  }

  /** The reply, its result (when an object) made of what the reader kept of each member. */
  end(): JsonRpcResponse {
    const rest = Buffer.concat(this.#rest.parts).toString('utf8')
    let body: unknown
    try {
      body = JSON.parse(rest)
    } catch (error) {
      throw new JsonRpcParseError(`malformed JSON: ${(error as Error).message}`, { cause: error })
    }
    if (this.#inResult || this.#depth !== 0) throw new JsonRpcParseError('the reply ends inside its result')
    if (this.#sawResult && typeof body === 'object' && body !== null && 'result' in body) body.result = this.#members
    return decodeJsonRpcBody(body)
  }

  #endMember(chunk: Buffer, end: number): void {
    if (this.#member.from === undefined && this.#member.parts.length === 0) return
    const text = this.#member.text(chunk, end)
    let member: Record<string, unknown>
    try {
      member = JSON.parse(`{${text}}`) as Record<string, unknown>
    } catch (error) {
      throw new JsonRpcParseError(`malformed JSON: ${(error as Error).message}`, { cause: error })
    }
    for (const key in member) this.#members[key] = this.#reader(key, member[key])
  }
}

/** An object result's members as `reader` keeps them; any other result as it is. */
export function readMembers(result: unknown, reader: MemberReader): unknown {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return result
  const kept: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(result)) kept[key] = reader(key, value)
  return kept
}
