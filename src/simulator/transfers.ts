import type { IncomingMessage, ServerResponse } from 'node:http'
import { exportRaw, exportVhd, exportVhdDelta } from '../disks/export.js'
import { importDisk } from '../disks/import.js'
import type { XoRecord } from '../driver/types.js'
import { isKeelError } from '../errors.js'
import type { Services } from './context.js'
import type { StoredObject } from './database.js'
import { XapiFailure } from './failures.js'
import { compressionOf, describeVm, exportXva, importXva, type StreamWorkers } from '../disks/xva.js'
import type { DiskAccess } from '../driver/types.js'
import { sendLent } from './lent-body.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import { SIMULATOR_USER } from './actions.js'
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

/** The request belongs to another host: answered 302 with the same query there, the task left to that host. */
class Redirect extends Error {
  constructor(readonly location: string) {
    super(`redirected to ${location}`)
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

/** The bytes up to `limit`, then nothing more until the connection closes, if `take` says the fault is still armed (fault injection). */
async function* stall(bytes: AsyncIterable<Buffer>, limit: number, take: () => boolean, response: ServerResponse): AsyncGenerator<Buffer> {
  let sent = 0
  for await (const chunk of bytes) {
    if (sent + chunk.length >= limit && take()) {
      yield chunk.subarray(0, limit - sent)
      await new Promise((resolve) => response.once('close', resolve))
      throw new XapiFailure('VDI_IO_ERROR', 'the client went away from a stalled export (injected fault)')
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
  readonly #workers: StreamWorkers
  readonly #addressOf: (hostRef: string) => string | undefined

  /** `addressOf` tells where a host answers, undefined when it does not answer on an address of its own. */
  constructor(services: Services, tasks: Tasks, faults: Faults, workers: StreamWorkers, addressOf: (hostRef: string) => string | undefined) {
    this.#services = services
    this.#tasks = tasks
    this.#faults = faults
    this.#workers = workers
    this.#addressOf = addressOf
  }

  /** Handles the request, received by the host `hostRef`, if its path is one of the handlers; answers false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse, hostRef: string): boolean {
    const url = new URL(request.url ?? '/', 'http://simulator')
    const route = `${request.method ?? ''} ${url.pathname}`
    const handler = this.#routes[route]
    if (handler === undefined) return false
    const task = url.searchParams.get('task_id') ?? undefined
    // task.cancel stops the transfer where it is: the connection goes, and an import's write session is aborted with it.
    const cancel = task === undefined ? undefined : this.#tasks.transfer(task)
    cancel?.addEventListener('abort', () => {
      request.destroy(new Error('the task was cancelled'))
      response.destroy()
    })
    // A stalled host says nothing and reads nothing: the transfer ends only with its connection (or its task cancelled).
    const work = this.#faults.stallsTransfers ? new Promise<never>((_, reject) => request.socket.once('close', () => reject(new XapiFailure('INTERNAL_ERROR', 'the client went away')))) : handler(url.searchParams, request, response, hostRef)
    work.then(
      (value) => {
        if (task !== undefined) this.#tasks.settle(task, { value })
      },
      (error: unknown) => {
        if (error instanceof Redirect) {
          if (task !== undefined) this.#tasks.release(task)
          request.resume()
          response.writeHead(302, { location: error.location, connection: 'close', 'content-length': 0 })
          response.end()
          return
        }
        const failure = error instanceof HttpRefusal ? error.failure : error instanceof XapiFailure ? error.description : this.#wording(error)
        if (task !== undefined) this.#tasks.settle(task, { failure })
        if (!response.headersSent) refuse(response, error instanceof HttpRefusal ? error.status : 500, failure.join(' '))
        else response.destroy()
        request.resume()
      },
    )
    return true
  }

  readonly #routes: Readonly<Record<string, (query: URLSearchParams, request: IncomingMessage, response: ServerResponse, hostRef: string) => Promise<XmlRpcValue>>> = {
    'GET /export_raw_vdi': (query, _request, response, hostRef) => this.#export(query, response, hostRef),
    'PUT /import_raw_vdi': (query, request, response, hostRef) => this.#import(query, request, response, hostRef),
    'GET /export': (query, request, response, hostRef) => this.#exportVm(query, request, response, hostRef),
    'PUT /import': (query, request, response, hostRef) => this.#importVm(query, request, response, hostRef),
  }

  #disks(): DiskAccess {
    const { disks } = this.#services.driver
    if (disks === undefined) throw new HttpRefusal(500, ['INTERNAL_ERROR', 'this lab serves no disk content'])
    return disks
  }

  /** An object of `cls` by ref or uuid, with its lab record. */
  #object(cls: string, value: string | null, name: string): XoRecord {
    if (value === null) throw new HttpRefusal(400, ['INVALID_VALUE', name, ''])
    const { db, feed } = this.#services
    let stored: StoredObject
    try {
      stored = value.startsWith('OpaqueRef:') ? db.expect(cls, value) : db.byUuid(cls, value)
    } catch (error) {
      throw error instanceof XapiFailure ? new HttpRefusal(404, error.description) : error
    }
    const record = feed.labRecord(stored.ref)
    if (record === undefined || record['_xapiRef'] !== stored.ref) throw new HttpRefusal(404, ['HANDLE_INVALID', cls, value])
    return record
  }

  /** GET /export: a halted VM, snapshot or template as an XVA, `use_compression` gzip (or true) or zstd. */
  async #exportVm(query: URLSearchParams, request: IncomingMessage, response: ServerResponse, hostRef: string): Promise<string> {
    this.#authenticate(query, request)
    const disks = this.#disks()
    const vm = this.#object('VM', query.get('ref') ?? query.get('uuid'), 'ref')
    const { description, vdis } = describeVm(vm, (id) => this.#services.driver.getObject(id))
    this.#redirect(vdis.map((vdi) => vdi['$SR']), request, hostRef)
    if (vm['power_state'] !== 'Halted') throw new HttpRefusal(500, ['VM_BAD_POWER_STATE', String(vm['_xapiRef']), 'halted', String(vm['power_state']).toLowerCase()])
    let compression
    try {
      compression = compressionOf(query.get('use_compression') ?? undefined)
    } catch {
      throw new HttpRefusal(400, ['INVALID_VALUE', 'use_compression', query.get('use_compression') ?? ''])
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream', connection: 'close' })
    await sendLent(response, exportXva(disks, description, vdis, compression, this.#workers, { concurrency: CONCURRENCY }))
    return ''
  }

  /** PUT /import: an XVA (plain, gzip or zstd) as a new halted VM on `sr_id` (default: the pool's default SR); the task's result is the new VM's ref, in a set. */
  async #importVm(query: URLSearchParams, request: IncomingMessage, response: ServerResponse, hostRef: string): Promise<XmlRpcValue> {
    this.#authenticate(query, request)
    const disks = this.#disks()
    let srRef = query.get('sr_id')
    if (srRef === null) for (const pool of this.#services.db.ofClass('pool')) srRef = String(pool.record['default_SR'])
    const sr = this.#object('SR', srRef, 'sr_id')
    this.#redirect([sr.id], request, hostRef)
    response.writeHead(200, { connection: 'close' })
    response.flushHeaders()
    const id = await importXva(disks, sr, request, SIMULATOR_USER, this.#workers)
    response.end()
    return [String(this.#services.driver.getObject(id)?.['_xapiRef'])]
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

  /**
   * A VDI on an SR local to another host is read and written there: XAPI
   * answers 302 to that host with the same query (shared notes on xapi §2.4),
   * when that host answers on an address of its own. So is a VM whose disks
   * are on such an SR exported, and an XVA imported onto one.
   */
  #redirect(srIds: Iterable<unknown>, request: IncomingMessage, hostRef: string): void {
    let owner: string | undefined
    for (const srId of srIds) owner ??= this.#localHost(String(srId))
    const address = owner !== undefined && owner !== hostRef ? this.#addressOf(owner) : undefined
    if (address === undefined) return
    const location = new URL(request.url ?? '/', `http://${request.headers.host ?? 'localhost'}`)
    location.protocol = 'encrypted' in request.socket ? 'https:' : 'http:'
    location.hostname = address
    throw new Redirect(location.href)
  }

  /** The host of an SR that is not shared (its PBD's), as a XAPI ref. */
  #localHost(srId: string): string | undefined {
    const { db } = this.#services
    const sr = db.get(String(this.#services.driver.getObject(srId)?.['_xapiRef']))
    if (sr === undefined || sr.record['shared'] === true) return undefined
    const pbds = Array.isArray(sr.record['PBDs']) ? sr.record['PBDs'] : []
    const host = pbds.map((pbd) => db.get(String(pbd))?.record['host']).find((ref) => typeof ref === 'string')
    return typeof host === 'string' ? host : undefined
  }

  #vdi(value: string | null, name: string): { record: XoRecord } {
    return { record: this.#object('VDI', value, name) }
  }

  #format(query: URLSearchParams): 'raw' | 'vhd' {
    const format = query.get('format') ?? 'raw'
    if (format !== 'raw' && format !== 'vhd') throw new HttpRefusal(400, ['INVALID_VALUE', 'format', format])
    return format
  }

  async #export(query: URLSearchParams, response: ServerResponse, hostRef: string): Promise<string> {
    this.#authenticate(query, response.req)
    const disks = this.#disks()
    const { record } = this.#vdi(query.get('vdi'), 'vdi')
    this.#redirect([record['$SR']], response.req, hostRef)
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
    const bytes = resetAfter === undefined ? stream.bytes : cut(stream.bytes, resetAfter, response)
    const stallAfter = this.#faults.exportStall
    // Each block goes back to the pool once the socket has it. Piped, they were dropped: a fresh 2 MiB buffer per block
    // counts as external memory, and at 10,000 VMs (a 470 MB heap) V8 marked the whole heap every 50 blocks or so, 1.1 to
    // 1.7 s of CPU per 512 MiB export against 0.1 to 0.2 s now (bench/RESULTS.md).
    await sendLent(response, stallAfter === undefined ? bytes : stall(bytes, stallAfter, () => this.#faults.takeExportStall(), response))
    return ''
  }

  async #import(query: URLSearchParams, request: IncomingMessage, response: ServerResponse, hostRef: string): Promise<string> {
    this.#authenticate(query, request)
    const disks = this.#disks()
    const { record } = this.#vdi(query.get('vdi'), 'vdi')
    this.#redirect([record['$SR']], request, hostRef)
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
