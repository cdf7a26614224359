import { randomUUID, timingSafeEqual, createHash } from 'node:crypto'
import type { XapiDatabase } from './database.js'
import { sessionInvalid, XapiFailure } from './failures.js'

export interface SessionOptions {
  readonly password: string
  /** the host a session is opened on (the pool master) */
  readonly hostRef: () => string
  readonly clock?: () => number
  /** sessions kept per originator; past it the oldest is invalidated (XAPI: 500) */
  readonly perOriginator?: number
  /** ms without a call after which a session expires (XAPI: 24 hours) */
  readonly idleTimeout?: number
}

interface Live {
  readonly originator: string
  lastActive: number
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

/**
 * Logins as XAPI counts them (shared notes on xapi §1.2): user root with the
 * simulator's password, sessions counted per originator with the oldest
 * invalidated past the limit, and idle sessions expired. Each session is a
 * `session` record too, so clients read it like any object.
 */
export class Sessions {
  readonly #db: XapiDatabase
  readonly #options: SessionOptions
  readonly #clock: () => number
  /** by ref, in login order (Map order), so the oldest of an originator is found first */
  readonly #live = new Map<string, Live>()
  readonly #password: Buffer

  constructor(db: XapiDatabase, options: SessionOptions) {
    this.#db = db
    this.#options = options
    this.#clock = options.clock ?? Date.now
    this.#password = digest(options.password)
  }

  /** Whether these are root's credentials; compared as digests, so the time taken says nothing about the password. */
  verify(user: string, password: string): boolean {
    return user === 'root' && timingSafeEqual(digest(password), this.#password)
  }

  login(user: string, password: string, originator: string): string {
    if (!this.verify(user, password)) throw new XapiFailure('SESSION_AUTHENTICATION_FAILED', user, 'Authentication failure')
    const limit = this.#options.perOriginator ?? 500
    const mine = [...this.#live].filter(([, live]) => live.originator === originator)
    for (const [ref] of mine.slice(0, Math.max(0, mine.length - limit + 1))) this.logout(ref)
    const uuid = randomUUID()
    const ref = `OpaqueRef:${randomUUID()}`
    const now = this.#clock()
    this.#live.set(ref, { originator, lastActive: now })
    this.#db.put('session', ref, uuid, {
      uuid,
      this_host: this.#options.hostRef(),
      last_active: new Date(now),
      validation_time: new Date(now),
      is_local_superuser: true,
      auth_user_name: 'root',
      originator,
      rbac_permissions: [],
    })
    return ref
  }

  /** The session is valid and now active, or SESSION_INVALID. */
  check(ref: unknown): string {
    const session = typeof ref === 'string' ? ref : String(ref)
    const live = this.#live.get(session)
    const now = this.#clock()
    if (live === undefined) throw sessionInvalid(session)
    if (now - live.lastActive > (this.#options.idleTimeout ?? 24 * 3600_000)) {
      this.logout(session)
      throw sessionInvalid(session)
    }
    live.lastActive = now
    return session
  }

  logout(ref: string): void {
    this.#live.delete(ref)
    this.#db.remove(ref)
  }

  /** Every session ends (fault injection, or a restart of the simulated toolstack). */
  invalidateAll(): void {
    for (const ref of [...this.#live.keys()]) this.logout(ref)
  }
}
