import type { IncomingMessage, ServerResponse } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import { exportRaw, exportVhd, exportVhdDelta } from '../disks/export.js'
import { importDisk } from '../disks/import.js'
import type { XoRecord } from '../driver/types.js'
import { isKeelError } from '../errors.js'
import type { Services } from './context.js'
import type { StoredObject } from './database.js'
import { XapiFailure } from './failures.js'
import type { Faults } from './faults.js'
import type { Tasks } from './tasks.js'

/** Reads at most this many blocks ahead of the socket. */
const CONCURRENCY = 4

class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    readonly failure: readonly string[],
  ) {
    super(failure.join(' '))
  }
}

/** The bytes up to `limit`, then the connection reset (fault injection). */
async function* cut(bytes: AsyncIterable<Buffer>, limit: number, response: ServerResponse): AsyncGenerator<Buffer> {
  let sent = 0
  for await (const chunk of bytes) {
    if (sent + chunk.length >= limit) {
      yield chunk.subarray(0, limit - sent)
      response.socket?.resetAndDestroy()
      throw new XapiFailure('VDI_IO_ERROR', 'connection reset (injected fault)')
    }
    sent += chunk.length
    yield chunk
  }
}

function refuse(response: ServerResponse, status: number, detail: string): void {
  const body = `<html><body><h1>HTTP ${status}</h1>${detail.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)}</body></html>`
  response.writeHead(status, { 'content-type': 'text/html', connection: 'close', 'content-length': Buffer.byteLength(body) })
  response.end(body)
}

/**
 * XAPI's disk handlers (shared notes on xapi §2.4): GET /export_raw_vdi and
 * PUT /import_raw_vdi on the lab's disk files, authenticated by `session_id`
 * in the query (or HTTP Basic as root), their outcome in the `task_id` task
 * when one is given. Exports end with the connection (no length, as XAPI
 * sends them); imports answer 200 at once, as XAPI does, and report through
 * the task.
 */
export class Transfers {
  readonly #services: Services
  readonly #tasks: Tasks
  readonly #faults: Faults

  constructor(services: Services, tasks: Tasks, faults: Faults) {
    this.#services = services
    this.#tasks = tasks
    this.#faults = faults
  }

  /** Handles the request if its path is one of the handlers; answers false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse): boolean {
    const url = new URL(request.url ?? '/', 'http://simulator')
    const route = `${request.method ?? ''} ${url.pathname}`
    if (route !== 'GET /export_raw_vdi' && route !== 'PUT /import_raw_vdi') return false
    const task = url.searchParams.get('task_id') ?? undefined
    const work = route === 'GET /export_raw_vdi' ? this.#export(url.searchParams, response) : this.#import(url.searchParams, request, response)
    work.then(
      (value) => {
        if (task !== undefined) this.#tasks.settle(task, { value })
      },
      (error: unknown) => {
        const failure = error instanceof HttpRefusal ? error.failure : error instanceof XapiFailure ? error.description : this.#wording(error)
        if (task !== undefined) this.#tasks.settle(task, { failure })
        if (!response.headersSent) refuse(response, error instanceof HttpRefusal ? error.status : 500, failure.join(' '))
        else response.destroy()
        request.resume()
      },
    )
    return true
  }

  #wording(error: unknown): string[] {
    if (isKeelError(error)) return error.code === 'INVALID_DISK_STREAM' || error.code === 'DISK_SIZE_MISMATCH' ? ['VDI_IO_ERROR', error.message] : ['INTERNAL_ERROR', error.message]
    return ['INTERNAL_ERROR', error instanceof Error ? error.message : String(error)]
  }

  #authenticate(query: URLSearchParams, request: IncomingMessage): void {
    const session = query.get('session_id')
    if (session !== null) {
      try {
        this.#services.sessions.check(session)
        return
      } catch {
        throw new HttpRefusal(401, ['SESSION_INVALID', session])
      }
    }
    const basic = /^Basic (.+)$/.exec(request.headers.authorization ?? '')?.[1]
    const [user, ...rest] = Buffer.from(basic ?? '', 'base64').toString().split(':')
    if (!this.#services.sessions.verify(user ?? '', rest.join(':'))) throw new HttpRefusal(401, ['SESSION_AUTHENTICATION_FAILED', user ?? '', 'Authentication failure'])
  }

  /** A VDI by ref or uuid, with its lab record. */
  #vdi(value: string | null, name: string): { stored: StoredObject; record: XoRecord } {
    if (value === null) throw new HttpRefusal(400, ['INVALID_VALUE', name, ''])
    const { db, feed } = this.#services
    let stored: StoredObject
    try {
      stored = value.startsWith('OpaqueRef:') ? db.expect('VDI', value) : db.byUuid('VDI', value)
    } catch (error) {
      throw error instanceof XapiFailure ? new HttpRefusal(404, error.description) : error
    }
    const record = feed.labRecord(stored.ref)
    if (record === undefined) throw new HttpRefusal(404, ['HANDLE_INVALID', 'VDI', value])
    return { stored, record }
  }

  #format(query: URLSearchParams): 'raw' | 'vhd' {
    const format = query.get('format') ?? 'raw'
    if (format !== 'raw' && format !== 'vhd') throw new HttpRefusal(400, ['INVALID_VALUE', 'format', format])
    return format
  }

  async #export(query: URLSearchParams, response: ServerResponse): Promise<string> {
    this.#authenticate(query, response.req)
    const { disks } = this.#services.driver
    if (disks === undefined) throw new HttpRefusal(500, ['INTERNAL_ERROR', 'this lab serves no disk content'])
    const { record } = this.#vdi(query.get('vdi'), 'vdi')
    const format = this.#format(query)
    const base = query.get('base')
    const size = Number(record['size'])
    const options = { concurrency: CONCURRENCY, now: Date.now() }
    let stream
    if (base !== null) {
      if (format !== 'vhd') throw new HttpRefusal(400, ['INVALID_VALUE', 'base', 'a differencing export is a VHD'])
      stream = await exportVhdDelta(disks, record, this.#vdi(base, 'base').record, size, options)
    } else stream = format === 'vhd' ? await exportVhd(disks, record, size, options) : await exportRaw(disks, record, size, options)
    // No length and the connection closed at the end: the body ends with the socket, as XAPI sends it.
    response.writeHead(200, { 'content-type': 'application/octet-stream', connection: 'close' })
    const resetAfter = this.#faults.takeExportReset()
    await pipeline(Readable.from(resetAfter === undefined ? stream.bytes : cut(stream.bytes, resetAfter, response)), response)
    return ''
  }

  async #import(query: URLSearchParams, request: IncomingMessage, response: ServerResponse): Promise<string> {
    this.#authenticate(query, request)
    const { disks } = this.#services.driver
    if (disks === undefined) throw new HttpRefusal(500, ['INTERNAL_ERROR', 'this lab serves no disk content'])
    const { record } = this.#vdi(query.get('vdi'), 'vdi')
    const format = this.#format(query)
    const length = request.headers['content-length'] === undefined ? undefined : Number(request.headers['content-length'])
    if (length === undefined || !Number.isSafeInteger(length)) throw new HttpRefusal(411, ['INVALID_VALUE', 'content-length', String(length)])
    response.writeHead(200, { connection: 'close' })
    response.flushHeaders()
    await importDisk(disks, record, Number(record['size']), format, request, format === 'raw' ? length : undefined)
    response.end()
    return ''
  }
}
