import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Services } from './context.js'
import { isFaultRequest } from './fault-path.js'
import type { PoolRoles } from './members.js'

/** The faults a test may switch on, by their names in the admin endpoint's body. */
export interface FaultSettings {
  /** ends every session now: the next call of each client answers SESSION_INVALID */
  readonly invalidate_sessions?: boolean
  /** forgets the event log: every token older than now answers EVENTS_LOST */
  readonly lose_events?: boolean
  /** ms every RPC answer waits from now on (0: none) */
  readonly delay_ms?: number
  /** the next disk export resets its connection after this many bytes */
  readonly reset_next_export_after?: number
  /** the master stops answering (its connections reset) and the next host that answers takes over */
  readonly stop_master?: boolean
  /** the member at this address stops answering (its connections reset); the master keeps its role */
  readonly stop_member?: string
  /** true: the master stops answering (its connections reset) and keeps its role; false: it answers again */
  readonly pause_master?: boolean
  /** true: every disk and VM transfer is taken and never answered; false: they are answered again */
  readonly stall_transfers?: boolean
  /** the next disk export to send more than this many bytes stops there and sends nothing more, its connection open */
  readonly stall_next_export_after?: number
  /** the next request for this path that comes on a connection which served one before is reset unread: a keep-alive connection the host closed as it was reused */
  readonly reset_next_reused?: string
}

const KEYS = ['invalidate_sessions', 'lose_events', 'delay_ms', 'reset_next_export_after', 'stop_master', 'stop_member', 'pause_master', 'stall_transfers', 'stall_next_export_after', 'reset_next_reused'] as const

const limitBody = 4096

/**
 * Fault injection for the tests of XAPI clients (issue 27), at
 * `POST /simulator/faults` with root's HTTP Basic credentials and a JSON body
 * of FaultSettings. It answers the standing settings. No real XAPI has this
 * endpoint.
 */
export class Faults {
  readonly #services: Services
  readonly #roles: PoolRoles
  #delay = 0
  #resetAfter: number | undefined
  #stallAfter: number | undefined
  #stalling = false
  #resetReused: string | undefined
  /** the connections that have carried a request */
  readonly #served = new WeakSet<Socket>()

  constructor(services: Services, roles: PoolRoles) {
    this.#services = services
    this.#roles = roles
  }

  /** Waits the injected delay, if any. */
  async delay(): Promise<void> {
    if (this.#delay > 0) await new Promise((resolve) => setTimeout(resolve, this.#delay))
  }

  /** The byte count after which this export is cut, once. */
  takeExportReset(): number | undefined {
    const after = this.#resetAfter
    this.#resetAfter = undefined
    return after
  }

  /** Whether transfers are taken and left unanswered. */
  get stallsTransfers(): boolean {
    return this.#stalling
  }

  /** The byte count after which the next export that reaches it stops sending. */
  get exportStall(): number | undefined {
    return this.#stallAfter
  }

  /** Takes the export stall, once: true for the export that reached it first. */
  takeExportStall(): boolean {
    const armed = this.#stallAfter !== undefined
    this.#stallAfter = undefined
    return armed
  }

  handle(request: IncomingMessage, response: ServerResponse): boolean {
    if (this.#resetsReused(request)) return true
    if (!isFaultRequest(request)) return false
    const answer = (status: number, body: unknown): void => {
      const text = JSON.stringify(body)
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      response.end(text)
    }
    const [user, ...rest] = Buffer.from(/^Basic (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '', 'base64').toString().split(':')
    if (request.method !== 'POST') {
      request.resume()
      answer(405, { error: 'POST a JSON object of fault settings' })
      return true
    }
    if (!this.#services.sessions.verify(user ?? '', rest.join(':'))) {
      request.resume()
      answer(401, { error: "root's credentials are needed" })
      return true
    }
    let text = ''
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      if (text.length > limitBody) request.destroy()
    })
    request.on('end', () => {
      const problem = this.#apply(text, request.socket)
      if (problem === undefined) answer(200, { delay_ms: this.#delay, reset_next_export_after: this.#resetAfter ?? null, reset_next_reused: this.#resetReused ?? null })
      else answer(400, { error: problem })
    })
    return true
  }

  /** Resets the request `reset_next_reused` waits for, once: one that came on a connection already used. */
  #resetsReused(request: IncomingMessage): boolean {
    const { socket } = request
    const reused = this.#served.has(socket)
    this.#served.add(socket)
    if (!reused || this.#resetReused === undefined || new URL(request.url ?? '/', 'http://simulator').pathname !== this.#resetReused) return false
    this.#resetReused = undefined
    socket.resetAndDestroy()
    return true
  }

  #apply(text: string, socket: Socket): string | undefined {
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return 'the body is not JSON'
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is a JSON object'
    const settings = body as Record<string, unknown>
    const unknown = Object.keys(settings).filter((key) => !KEYS.some((known) => known === key))
    if (unknown.length > 0) return `unknown settings: ${unknown.join(', ')}`
    const { invalidate_sessions: invalidate, lose_events: lose, delay_ms: delay, reset_next_export_after: reset, stop_master: stop, stop_member: member, pause_master: pause, stall_transfers: stall, stall_next_export_after: stallAfter, reset_next_reused: resetReused } = settings
    if (invalidate !== undefined && typeof invalidate !== 'boolean') return 'invalidate_sessions is a boolean'
    if (lose !== undefined && typeof lose !== 'boolean') return 'lose_events is a boolean'
    const count = (value: unknown): boolean => value === undefined || (Number.isSafeInteger(value) && (value as number) >= 0)
    if (!count(delay)) return 'delay_ms is a whole number of ms'
    if (!count(reset)) return 'reset_next_export_after is a whole number of bytes'
    if (stop !== undefined && stop !== true) return 'stop_master is true (a stopped master stays stopped)'
    if (member !== undefined && typeof member !== 'string') return "stop_member is a member's address"
    if (stop === true && member !== undefined) return 'stop_master and stop_member are set one at a time'
    if (pause !== undefined && typeof pause !== 'boolean') return 'pause_master is a boolean'
    if (pause !== undefined && (stop !== undefined || member !== undefined)) return 'pause_master is set without stop_master or stop_member'
    if (stall !== undefined && typeof stall !== 'boolean') return 'stall_transfers is a boolean'
    if (!count(stallAfter)) return 'stall_next_export_after is a whole number of bytes'
    if (resetReused !== undefined && (typeof resetReused !== 'string' || !resetReused.startsWith('/'))) return 'reset_next_reused is a path'
    // The settings that can be refused for the pool's state, so tried first: then nothing else is applied either.
    const refused = stop === true ? this.#roles.stopMaster() : member === undefined ? undefined : this.#roles.stopMember(member)
    if (refused !== undefined) return refused
    // Checked whole before any is applied: a bad body changes nothing.
    if (invalidate === true) this.#services.sessions.invalidateAll()
    if (lose === true) this.#services.db.forgetLog()
    if (typeof delay === 'number') this.#delay = delay
    if (typeof reset === 'number') this.#resetAfter = reset
    if (pause === true) this.#roles.pauseMaster(socket)
    if (pause === false) this.#roles.resumeMaster()
    if (typeof stall === 'boolean') this.#stalling = stall
    if (typeof stallAfter === 'number') this.#stallAfter = stallAfter
    if (typeof resetReused === 'string') this.#resetReused = resetReused
    return undefined
  }
}
