import { request, type IncomingMessage } from 'node:http'
import { Readable, pipeline } from 'node:stream'
import type { ReadableStream } from 'node:stream/web'
import ndjson from 'ndjson'

/**
 * How long a wait gives up with what was received so far: a hang detector with a readable message,
 * not a bound on delivery, so it is long enough for a busy shared machine.
 */
const WAIT = 30_000

/** A long-lived response read as it comes, raw bytes kept for byte-exact checks. */
export interface OpenStream {
  readonly response: IncomingMessage
  text(): string
  /** resolves once the received text satisfies `predicate` */
  until(predicate: (text: string) => boolean, timeout?: number): Promise<string>
  /** resolves with how the response ended: 'end' (clean) or 'aborted' */
  readonly ended: Promise<'end' | 'aborted'>
  close(): void
}

export function openStream(url: string, headers: Record<string, string>): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (response) => {
      let text = ''
      const waiters = new Set<() => void>()
      const ended = new Promise<'end' | 'aborted'>((done) => {
        response.once('end', () => done('end'))
        response.once('aborted', () => done('aborted'))
        response.once('error', () => done('aborted'))
      })
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        for (const waiter of [...waiters]) waiter()
      })
      resolve({
        response,
        text: () => text,
        until: (predicate, timeout = WAIT) =>
          new Promise((done, fail) => {
            const check = (): void => {
              if (!predicate(text)) return
              waiters.delete(check)
              clearTimeout(timer)
              done(text)
            }
            const timer = setTimeout(() => {
              waiters.delete(check)
              fail(new Error(`timed out waiting; received: ${text.slice(-2000)}`))
            }, timeout)
            waiters.add(check)
            check()
          }),
        ended,
        close: () => req.destroy(),
      })
    })
    req.once('error', reject)
    req.end()
  })
}

/** NDJSON values of a streaming response, parsed with the ndjson package as they arrive. */
export interface LineStream {
  readonly values: unknown[]
  until(count: number, timeout?: number): Promise<unknown[]>
  readonly response: IncomingMessage
  close(): void
}

export function openLines(url: string, headers: Record<string, string>): Promise<LineStream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (response) => {
      const values: unknown[] = []
      const waiters = new Set<() => void>()
      response.pipe(ndjson.parse()).on('data', (value: unknown) => {
        values.push(value)
        for (const waiter of [...waiters]) waiter()
      })
      resolve({
        values,
        response,
        until: (count, timeout = WAIT) =>
          new Promise((done, fail) => {
            const check = (): void => {
              if (values.length < count) return
              waiters.delete(check)
              clearTimeout(timer)
              done(values)
            }
            const timer = setTimeout(() => {
              waiters.delete(check)
              fail(new Error(`timed out waiting for ${count} lines; got ${JSON.stringify(values)}`))
            }, timeout)
            waiters.add(check)
            check()
          }),
        close: () => req.destroy(),
      })
    })
    req.once('error', reject)
    req.end()
  })
}

/** The frames of an event stream, each as its lines' fields. */
export function sseEvents(text: string): Array<{ id?: string; event: string; data: unknown }> {
  return text
    .slice(0, text.lastIndexOf('\n\n') + 2)
    .split('\n\n')
    .filter((frame) => frame !== '')
    .map((frame) => {
      const fields: Record<string, string> = {}
      for (const line of frame.split('\n')) {
        const colon = line.indexOf(': ')
        fields[line.slice(0, colon)] = line.slice(colon + 2)
      }
      return { ...(fields['id'] === undefined ? {} : { id: fields['id'] }), event: fields['event'] ?? '', data: JSON.parse(fields['data'] ?? 'null') as unknown }
    })
}

/** The values of a whole NDJSON body, parsed with the ndjson package. */
export async function ndjsonValues<T = unknown>(response: Response): Promise<T[]> {
  const values: T[] = []
  if (response.body === null) return values
  const lines = pipeline(Readable.fromWeb(response.body as ReadableStream), ndjson.parse(), () => {})
  for await (const value of lines) values.push(value as T)
  return values
}
