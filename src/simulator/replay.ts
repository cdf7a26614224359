import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createServer, type RequestListener, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { LOGIN, parseRecordedLine, SCRUBBED_PASSWORD, SCRUBBED_SESSION, type RecordedLine } from '../driver/xapi/recording.js'
import { encodeJsonRpcResult } from '../xapi/json-rpc.js'
import { XmlRpcDouble, type XmlRpcValue } from '../xapi/xml-rpc.js'
import type { CallOutcome } from './calls.js'
import { serverCertificate } from './certificate.js'
import { DEFAULT_MAX_BODY, rpcListener } from './http.js'

/** A file that is not a XAPI recording, with the line that says so. */
export class RecordingError extends Error {
  override readonly name = 'RecordingError'
}

export async function readRecording(file: string): Promise<RecordedLine[]> {
  const lines: RecordedLine[] = []
  let number = 0
  for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    number++
    if (text.trim() === '') continue
    const line = parseRecordedLine(text)
    if (line === undefined) throw new RecordingError(`${file}:${number}: not a line of a XAPI recording`)
    lines.push(line)
  }
  return lines
}

/** The longest an event.from past the recording waits, whatever timeout it asks (as the simulator). */
const MAX_WAIT_MS = 600_000
const PLACEHOLDERS = new Set([SCRUBBED_SESSION, SCRUBBED_PASSWORD])

/** A recorded value matches what is asked when equal, a scrubbed value matching anything. */
function matches(recorded: unknown, asked: unknown): boolean {
  if (typeof recorded === 'string' && PLACEHOLDERS.has(recorded)) return true
  if (Array.isArray(recorded)) return Array.isArray(asked) && asked.length === recorded.length && recorded.every((item, i) => matches(item, asked[i]))
  if (typeof recorded === 'object' && recorded !== null) {
    if (typeof asked !== 'object' || asked === null || Array.isArray(asked)) return false
    const keys = Object.keys(recorded)
    return keys.length === Object.keys(asked).length && keys.every((key) => key in asked && matches((recorded as Record<string, unknown>)[key], (asked as Record<string, unknown>)[key]))
  }
  return recorded === asked
}

/** What an event.from is matched on: its classes, not its token or timeout, so that batches are served in recorded order. */
const significant = (method: string, params: readonly unknown[]): readonly unknown[] => (method === 'event.from' ? [params[1]] : params.slice(1))

/** A recorded result as the wire writes it again: fractions as doubles (for XML-RPC), null as XAPI's void; XML-RPC's own values kept. */
function wireValue(value: unknown): XmlRpcValue {
  if (value instanceof Date || value instanceof XmlRpcDouble) return value
  if (typeof value === 'number') return Number.isInteger(value) ? value : new XmlRpcDouble(value)
  if (typeof value === 'string' || typeof value === 'boolean') return value
  if (Array.isArray(value)) return value.map(wireValue)
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, wireValue(item)]))
  return ''
}

/** Parameters as JSON-RPC carries them, whichever wire they came by (XML-RPC doubles and datetimes included). */
const asJson = (params: readonly unknown[]): unknown[] => (JSON.parse(encodeJsonRpcResult({ version: '2.0', id: 0 }, wireValue(params))) as { result: unknown[] }).result

/**
 * The answers of a recording: each call gets the next recorded answer to
 * the same method and parameters (the last one again once they are used
 * up), event.from the next recorded batch for the same classes. Failures
 * below XAPI (a timeout, a reset) are not replayed: they were the network's.
 * Parameters are compared as JSON-RPC carries them (`asJson`).
 */
export class RecordedAnswers {
  readonly #byMethod = new Map<string, RecordedLine[]>()
  readonly #queues = new Map<string, { readonly lines: readonly RecordedLine[]; next: number }>()

  constructor(lines: readonly RecordedLine[]) {
    for (const line of lines) {
      // HTTP handler lines (`GET /path`) are no calls: their bodies were not recorded.
      if ((line.kind === 'error' && !Array.isArray(line.error)) || line.method.includes(' ')) continue
      const recorded = this.#byMethod.get(line.method) ?? []
      recorded.push(line)
      this.#byMethod.set(line.method, recorded)
    }
  }

  /** The next answer; `past-end` when an event.from has had every recorded batch. */
  next(method: string, params: readonly unknown[]): CallOutcome | 'past-end' {
    const asked = significant(method, params)
    const key = `${method}\0${JSON.stringify(asked)}`
    let queue = this.#queues.get(key)
    if (queue === undefined) {
      const recorded = this.#byMethod.get(method)
      if (recorded === undefined) return { failure: ['MESSAGE_METHOD_UNKNOWN', method] }
      queue = { lines: recorded.filter((line) => matches(significant(method, line.params), asked)), next: 0 }
      this.#queues.set(key, queue)
    }
    const line = queue.lines[Math.min(queue.next, queue.lines.length - 1)]
    if (line === undefined) return { failure: ['INTERNAL_ERROR', `replay: no recorded answer to ${method} with these parameters`] }
    if (queue.next >= queue.lines.length && method === 'event.from') return 'past-end'
    queue.next++
    return line.kind === 'error' ? { failure: line.error as [string, ...string[]] } : { value: wireValue(line.result) }
  }
}

export interface ReplayOptions {
  readonly file: string
  /** HTTPS with the folder's self-signed certificate (made on first use, as the simulator's), valid for these names */
  readonly tls?: { readonly dataDir: string; readonly names: readonly string[] }
}

export interface Replay {
  listen(port: number, host: string): Promise<string>
  /** resolves once an event.from has asked past the last recorded batch: the client has applied them all */
  exhausted(): Promise<void>
  close(): Promise<void>
}

/**
 * A recording (KEEL_XAPI_RECORD) served as a XAPI endpoint: any login is
 * accepted, calls are answered from the recorded answers, event.from
 * serves the recorded batches in order and then waits as an idle pool
 * would. The HTTP handlers are not served: their bodies are not recorded.
 */
export async function openReplay(options: ReplayOptions): Promise<Replay> {
  const answers = new RecordedAnswers(await readRecording(options.file))
  const shutdown = new AbortController()
  let reachEnd: () => void = () => undefined
  const end = new Promise<void>((resolve) => (reachEnd = resolve))
  const idle = (params: readonly unknown[]): Promise<CallOutcome> =>
    new Promise((resolve) => {
      reachEnd()
      const answer = (): void => {
        clearTimeout(timer)
        shutdown.signal.removeEventListener('abort', answer)
        resolve({ value: { events: [], valid_ref_counts: {}, token: String(params[2] ?? '') } })
      }
      const timeout = Number(params[3] instanceof XmlRpcDouble ? params[3].value : params[3])
      const timer = setTimeout(answer, Math.min(Number.isFinite(timeout) ? Math.max(0, timeout) * 1000 : 0, MAX_WAIT_MS))
      shutdown.signal.addEventListener('abort', answer, { once: true })
    })
  const dispatcher = {
    call: async (method: string, params: readonly unknown[]): Promise<CallOutcome> => {
      if (method === LOGIN) return { value: `OpaqueRef:${randomUUID()}` }
      if (method === 'session.logout') return { value: '' }
      const outcome = answers.next(method, asJson(params))
      return outcome === 'past-end' ? idle(params) : outcome
    },
  }
  const listener: RequestListener = rpcListener(dispatcher, DEFAULT_MAX_BODY)
  let server: Server | undefined
  return {
    listen: async (port, host) => {
      const { tls } = options
      if (tls !== undefined) await mkdir(tls.dataDir, { recursive: true, mode: 0o700 })
      server = tls === undefined ? createServer(listener) : createHttpsServer(await serverCertificate(tls.dataDir, [...tls.names, host]), listener)
      const listening = server
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject)
        listening.listen(port, host, () => resolve())
      })
      const bound = (listening.address() as AddressInfo).port
      return `${tls === undefined ? 'http' : 'https'}://${host.includes(':') ? `[${host}]` : host}:${bound}`
    },
    exhausted: () => end,
    close: async () => {
      shutdown.abort()
      if (server === undefined) return
      const closing = server
      closing.closeAllConnections()
      await new Promise<void>((resolve) => closing.close(() => resolve()))
    },
  }
}
