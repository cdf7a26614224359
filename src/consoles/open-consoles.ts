import type { Logger } from 'pino'
import type { PrivilegeSet } from '../acl/evaluate.js'
import { allows } from '../acl/check.js'
import type { Principal } from '../auth/principal.js'
import { isAdmin } from '../auth/principal.js'
import type { XoRecord } from '../driver/types.js'
import { KeelError } from '../errors.js'
import type { EventBus } from '../events/bus.js'
import { LiveStreams, type StreamCredential } from '../http/live-streams.js'

/** RFC 6455 close codes a console ends with. */
export const CLOSE = { normal: 1000, goingAway: 1001, protocolError: 1002, policy: 1008, tooBig: 1009, internalError: 1011 } as const

/** One open console, as the registry needs it. */
export interface OpenConsole {
  readonly principal: Principal
  readonly credential: StreamCredential
  readonly objectId: string
  /** ends the WebSocket with this code and reason */
  close(code: number, reason: string): void
}

export interface ConsoleLimits {
  readonly maxPerUser: number
  readonly max: number
}

/** A few tabs per user; in all, far below what one process's sockets and screens would strain at. */
export const CONSOLE_LIMITS: ConsoleLimits = { maxPerUser: 8, max: 128 }

/** The access-control resource of an object that has a console, and the action that opens it. */
export const CONSOLE_ACTION = 'console'
const RESOURCES: Readonly<Record<string, string>> = { VM: 'vm', host: 'host' }

export const consoleResourceOf = (object: XoRecord): string | undefined => (Object.hasOwn(RESOURCES, object.type) ? RESOURCES[object.type] : undefined)

/** Whether the object has a domain whose console can be shown: a running host, a running or paused VM (its screen stays). */
export function hasLiveConsole(object: XoRecord): boolean {
  const state = (object as { power_state?: unknown }).power_state
  return state === 'Running' || (object.type === 'VM' && state === 'Paused')
}

/**
 * Every open console, bounded per user and in all, each closed when the
 * object stops or goes, when its caller may no longer open it (a role, group
 * or privilege change, the object's tags under a selector), or when the
 * credentials it was opened with end (a revoked or expired token, a changed
 * password or permission: the same checks as event streams).
 */
export class OpenConsoles {
  readonly #open = new Set<OpenConsole>()
  readonly #limits: ConsoleLimits
  readonly #getObject: (id: string) => XoRecord | undefined
  readonly #scopeOf: (userId: string) => PrivilegeSet
  readonly #credentials: LiveStreams
  readonly #removals = new Map<OpenConsole, () => void>()
  readonly #stop: () => void

  constructor(deps: {
    readonly limits: ConsoleLimits
    readonly bus: EventBus
    readonly getObject: (id: string) => XoRecord | undefined
    readonly scopeOf: (userId: string) => PrivilegeSet
    readonly onCredentialsChange: (listener: (userId: string | undefined) => void) => () => void
    readonly credentialCheckInterval: number
    readonly clock: () => number
    readonly log: Logger
  }) {
    this.#limits = deps.limits
    this.#getObject = deps.getObject
    this.#scopeOf = deps.scopeOf
    this.#credentials = new LiveStreams({ maxSleep: deps.credentialCheckInterval, clock: deps.clock, log: deps.log })
    const stopCredentials = deps.onCredentialsChange((userId) => this.#credentials.recheck(userId))
    const stopBus = deps.bus.subscribe(({ object }) => {
      if (this.#open.size === 0) return
      if (object.type === 'user') this.#credentials.recheck(object.id)
      if (ACCESS_TYPES.has(object.type)) this.#recheckAll()
      else for (const open of [...this.#open]) if (open.objectId === object.id) this.#recheck(open)
    })
    this.#stop = () => {
      stopCredentials()
      stopBus()
    }
  }

  get size(): number {
    return this.#open.size
  }

  /** Throws TOO_MANY_CONSOLES when one more console would pass a bound. */
  checkRoom(userId: string): void {
    if (this.#open.size >= this.#limits.max) throw new KeelError('TOO_MANY_CONSOLES', 'too many consoles are open', { limit: this.#limits.max })
    let mine = 0
    for (const open of this.#open) if (open.principal.id === userId) mine++
    if (mine >= this.#limits.maxPerUser) throw new KeelError('TOO_MANY_CONSOLES', 'you have too many consoles open', { limit: this.#limits.maxPerUser })
  }

  /** Adds an open console; returns how to forget it once its socket has closed. */
  add(open: OpenConsole): () => void {
    this.#open.add(open)
    const removeCredential = this.#credentials.add({
      label: { userId: open.principal.id, console: open.objectId },
      credential: open.credential,
      end: () => this.#end(open, CLOSE.policy, 'your credentials are no longer valid'),
    })
    this.#removals.set(open, removeCredential)
    // The object may have stopped, or access changed, while the upgrade was answered.
    this.#recheck(open)
    return () => this.#forget(open)
  }

  /** Closes every console (Keel stops). */
  close(): void {
    this.#stop()
    for (const open of [...this.#open]) this.#end(open, CLOSE.goingAway, 'Keel is stopping')
    this.#credentials.endAll()
  }

  #recheckAll(): void {
    for (const open of [...this.#open]) this.#recheck(open)
  }

  #recheck(open: OpenConsole): void {
    const object = this.#getObject(open.objectId)
    const kind = object?.type === 'host' ? 'host' : 'VM'
    if (object === undefined) return this.#end(open, CLOSE.normal, `the ${kind} is gone`)
    if (!hasLiveConsole(object)) return this.#end(open, CLOSE.normal, `the ${kind} stopped`)
    if (!mayOpen(open.principal, object, this.#scopeOf)) this.#end(open, CLOSE.policy, 'you may no longer open this console')
  }

  #end(open: OpenConsole, code: number, reason: string): void {
    if (!this.#open.has(open)) return
    this.#forget(open)
    open.close(code, reason)
  }

  #forget(open: OpenConsole): void {
    this.#open.delete(open)
    this.#removals.get(open)?.()
    this.#removals.delete(open)
  }
}

/** Changes that can change what any user may do. */
const ACCESS_TYPES = new Set(['user', 'group', 'acl-role', 'acl-privilege'])

/** Whether the caller, with the privileges they hold now, may open the object's console. */
export function mayOpen(principal: Principal, object: XoRecord, scopeOf: (userId: string) => PrivilegeSet): boolean {
  const resource = consoleResourceOf(object)
  if (resource === undefined) return false
  const current = isAdmin(principal) ? principal : { ...principal, privileges: scopeOf(principal.id) }
  return allows(current, resource, CONSOLE_ACTION, object)
}
