import { hostname } from 'node:os'
import { pino, type Logger } from 'pino'
import { LogDestination } from './log-destination.js'

/** One answered request, as its log line says it. */
export interface RequestLogEntry {
  /** plain text: ours, or a client's that matched the plain pattern */
  readonly reqId: string
  /** one of the methods node's parser accepts, all plain tokens */
  readonly method: string
  readonly url: string | undefined
  readonly status: number
  readonly ms: number
  readonly aborted: boolean
}

export interface ServiceLog {
  readonly log: Logger
  /** Logs one answered request (at `info`). */
  request(entry: RequestLogEntry): void
  /** Writes out what was logged so far; resolves once it is written (a clean stop, a fatal exit). */
  flush(): Promise<void>
  /** Lines not written: dropped past the buffer's bound, or lost to a failed write. */
  droppedLines(): number
}

const INFO = 30
const WARN = 40

/** Printable ASCII without a quote or backslash: text a JSON string holds as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** A JSON string of `text`; plain text, the usual case for ids, methods and paths, skips the serializer. */
export const quoted = (text: string | undefined): string => (text !== undefined && PLAIN.test(text) ? `"${text}"` : JSON.stringify(text) ?? 'null')

/**
 * A request target as a JSON string. node:http refuses a target holding a control character
 * (test/log/request-line.test.ts holds it to that), so a quote or a backslash is all that may need
 * escaping: two scans for them cost a single-object read 700 instructions less than `quoted`'s test.
 */
export const quotedTarget = (target: string | undefined): string =>
  target !== undefined && !target.includes('"') && !target.includes('\\') ? `"${target}"` : quoted(target)

/** `.000` to `.999`: a duration's fraction of a millisecond, as text. */
const FRACTIONS = Array.from({ length: 1000 }, (_, micros) => `.${String(micros).padStart(3, '0')}`)

/**
 * A duration in ms, to the µs, as a JSON number (`0.120`, `12.000`). Built from integers, whose
 * texts V8 keeps at hand: writing the float itself cost 80 ns a line.
 */
export function millisText(ms: number): string {
  const micros = Math.round(ms * 1000)
  return `${Math.floor(micros / 1000)}${FRACTIONS[micros % 1000]}`
}

/**
 * pino to stderr through a buffered, asynchronous, bounded destination (see
 * LogDestination). The request line, written once per request, is formatted
 * here in pino's own shape rather than through pino's generic serializer,
 * which cost a third of a single-object read.
 */
export function createServiceLog(level: string, maxBuffered: number): ServiceLog {
  const identity = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`
  const destination = new LogDestination(process.stderr, {
    maxBuffered,
    droppedLine: (count) => `{"level":${WARN},"time":${Date.now()}${identity},"dropped":${count},"msg":"log lines dropped"}\n`,
  })
  const log = pino({ level }, destination)
  const prefix = `{"level":${INFO},"time":`
  const bindings = `${identity},"reqId":"`
  // A line's start changes once a millisecond, and dozens of requests share it under load.
  let now = 0
  let start = ''
  // A client polling one URL sends the same method and target again and again: their part of the line is
  // kept, 350 instructions a single read less (bench/RESULTS.md, 2026-11-27 14:44–15:25 UTC, wip/s39-onevm).
  let lastMethod = ''
  let lastUrl: string | undefined = ''
  let middle = ''
  // Kept by pino's own event: asking the logger costs 400 instructions a line (a lookup by name).
  let infoEnabled = log.isLevelEnabled('info')
  log.on('level-change', () => {
    infoEnabled = log.isLevelEnabled('info')
  })
  return {
    log,
    request(entry) {
      if (!infoEnabled) return
      const time = Date.now()
      if (time !== now) {
        now = time
        start = `${prefix}${time}${bindings}`
      }
      if (entry.url !== lastUrl || entry.method !== lastMethod) {
        lastMethod = entry.method
        lastUrl = entry.url
        middle = `","method":"${entry.method}","url":${quotedTarget(entry.url)},"status":`
      }
      destination.write(`${start}${entry.reqId}${middle}${entry.status},"ms":${millisText(entry.ms)}${entry.aborted ? ',"aborted":true' : ''},"msg":"request"}\n`)
    },
    flush: () => destination.flush(),
    droppedLines: () => destination.dropped,
  }
}

/** The same request lines through any pino logger (tests, embedders). */
export function loggerServiceLog(log: Logger): ServiceLog {
  return {
    log,
    request: ({ aborted, ...entry }) => log.info({ ...entry, ...(aborted ? { aborted } : {}) }, 'request'),
    flush: () => Promise.resolve(),
    droppedLines: () => 0,
  }
}
