import { once } from 'node:events'
import { mkdir, open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { finished } from 'node:stream/promises'
import type { WriteStream } from 'node:fs'
import type { Logger } from 'pino'
import { LOGIN, SCRUBBED_PASSWORD, SCRUBBED_SESSION, type RecordedLine } from './recording.js'
import type { RpcOptions, RpcTarget } from './transport.js'
import { readMembers } from './result-members.js'
import { XapiError } from './types.js'

/** One JSON-RPC call, as transport.ts sends it. */
export type Rpc = (target: RpcTarget, method: string, params: readonly unknown[], options: RpcOptions) => Promise<unknown>

export interface RecorderOptions {
  /** the folder of the recordings, made 0700 if missing */
  readonly dir: string
  /** the pool's address as given: it names the file */
  readonly host: string
  /** bytes a file holds at most: past it the recording stops, with a warning */
  readonly maxBytes: number
  readonly log?: Logger
  readonly clock?: () => number
}

/** The default size cap of one recording. */
export const DEFAULT_RECORD_MAX_BYTES = 256 * 1024 * 1024
const JOINS = new Set(['pool.join', 'pool.join_force'])

/** Shorter secrets are replaced where they are a whole value only: as parts of other strings they would take innocent text with them. */
const MIN_SUBSTRING_SECRET = 8

/**
 * Records one pool connection as NDJSON (recording.ts): every call, event
 * batch and failure, passwords and session refs replaced wherever they
 * appear. A line is written when its answer arrives; a caller waits while
 * the file is behind (backpressure), so memory holds the stream's buffer
 * and at most one line per call in flight. At the size cap the recording stops rather than rotating:
 * a later file alone, without the first full fetch, could not be replayed.
 */
export class XapiRecorder {
  readonly path: string
  readonly #stream: WriteStream
  readonly #options: RecorderOptions
  readonly #secrets = new Map<string, string>()
  #bytes = 0
  #drained: Promise<unknown> | undefined
  #stopped = false
  #closing: Promise<void> | undefined

  private constructor(path: string, handle: FileHandle, options: RecorderOptions) {
    this.path = path
    this.#options = options
    this.#stream = handle.createWriteStream()
    this.#stream.on('error', (error) => this.#stop('the recording cannot be written', error))
  }

  /** Creates `<host>-<time>.ndjson` (mode 0600) in the folder. */
  static async open(options: RecorderOptions): Promise<XapiRecorder> {
    await mkdir(options.dir, { recursive: true, mode: 0o700 })
    const stamp = new Date((options.clock ?? Date.now)()).toISOString().replace(/:/g, '-')
    const base = join(options.dir, `${options.host.replace(/[^A-Za-z0-9.-]/g, '_')}-${stamp}`)
    for (let n = 1; ; n++) {
      const path = `${base}${n === 1 ? '' : `-${n}`}.ndjson`
      try {
        return new XapiRecorder(path, await open(path, 'wx', 0o600), options)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
    }
  }

  /** `rpc`, each call recorded once answered. */
  wrap(rpc: Rpc): Rpc {
    return async (target, method, params, { member, ...options }) => {
      this.#learn(method, params)
      const sent = this.#now()
      let result: unknown
      try {
        // The whole result is recorded, as the pool sent it; the caller gets what its reader keeps.
        result = await rpc(target, method, params, options)
      } catch (error) {
        await this.#write({ t: iso(sent), kind: 'error', method, params, error: describe(error), ms: this.#now() - sent })
        throw error
      }
      if (method === LOGIN && typeof result === 'string') this.#secrets.set(result, SCRUBBED_SESSION)
      await this.#write({ t: iso(sent), kind: method === 'event.from' ? 'event-batch' : 'call', method, params, result, ms: this.#now() - sent })
      return member === undefined ? result : readMembers(result, member)
    }
  }

  /** An HTTP handler request, recorded with its query and status (not its body). */
  async handler<T extends { statusCode?: number | undefined }>(method: string, path: string, query: Readonly<Record<string, string>>, send: () => Promise<T>): Promise<T> {
    const sent = this.#now()
    const recorded = { t: iso(sent), method: `${method} ${path}`, params: [query] }
    let response: T
    try {
      response = await send()
    } catch (error) {
      await this.#write({ ...recorded, kind: 'error', error: describe(error), ms: this.#now() - sent })
      throw error
    }
    await this.#write({ ...recorded, kind: 'call', result: { status: response.statusCode ?? 0 }, ms: this.#now() - sent })
    return response
  }

  /** Writes out what is buffered and closes the file; lines of calls answered later are not recorded. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopped = true
      this.#stream.end()
      await finished(this.#stream).catch(() => undefined)
    })()
    return this.#closing
  }

  /** The secrets a call carries: a login's password, every other call's session (its first parameter), a join's password. */
  #learn(method: string, params: readonly unknown[]): void {
    const [first, second] = params
    if (method === LOGIN) {
      if (typeof second === 'string' && second !== '') this.#secrets.set(second, SCRUBBED_PASSWORD)
      return
    }
    if (typeof first === 'string' && first !== '') this.#secrets.set(first, SCRUBBED_SESSION)
    // pool.join carries the credentials of another pool's master (session, address, user, password).
    const password = JOINS.has(method.replace(/^Async\./, '')) ? params[3] : undefined
    if (typeof password === 'string' && password !== '') this.#secrets.set(password, SCRUBBED_PASSWORD)
  }

  async #write(line: RecordedLine): Promise<void> {
    if (this.#stopped) return
    const text = JSON.stringify(this.#scrub(line)) + '\n'
    const size = Buffer.byteLength(text)
    if (this.#bytes + size > this.#options.maxBytes) {
      this.#stop(`the recording reached its size cap (${this.#options.maxBytes} bytes)`)
      return
    }
    this.#bytes += size
    if (this.#stream.write(text)) return
    // One wait for every caller held by the same full buffer (a full fetch writes 15 lines at once).
    this.#drained ??= once(this.#stream, 'drain').then(
      () => (this.#drained = undefined),
      () => undefined,
    )
    await this.#drained
  }

  #scrub(value: unknown): unknown {
    if (typeof value === 'string') return this.#scrubText(value)
    if (Array.isArray(value)) return value.map((item) => this.#scrub(item))
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [this.#scrubText(key), this.#scrub(item)]))
    return value
  }

  #scrubText(text: string): string {
    const whole = this.#secrets.get(text)
    if (whole !== undefined) return whole
    let scrubbed = text
    for (const [secret, placeholder] of this.#secrets) if (secret.length >= MIN_SUBSTRING_SECRET) scrubbed = scrubbed.replaceAll(secret, placeholder)
    return scrubbed
  }

  #stop(message: string, error?: unknown): void {
    if (this.#stopped) return
    this.#options.log?.warn({ file: this.path, ...(error === undefined ? {} : { err: error }) }, `XAPI: ${message}; recording stopped`)
    void this.close()
  }

  #now(): number {
    return (this.#options.clock ?? Date.now)()
  }
}

const iso = (ms: number): string => new Date(ms).toISOString()

function describe(error: unknown): readonly string[] | { readonly transport: string } {
  if (error instanceof XapiError) return [error.code, ...error.params]
  return { transport: error instanceof Error ? error.message : String(error) }
}
