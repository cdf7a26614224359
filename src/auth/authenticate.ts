import { createHmac, randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { LRUCache } from 'lru-cache'
import { KeelError } from '../errors.js'
import type { Principal } from './principal.js'
import type { Directory } from './users.js'
import type { TokenStore } from './tokens.js'
import { hashPassword, verifyPassword } from './passwords.js'

export const invalidCredentials = (): KeelError => new KeelError('INVALID_CREDENTIALS', 'invalid credentials')

export interface Credentials {
  readonly cookie: string | undefined
  readonly authorization: string | undefined
  /** the connection they came on (its socket), so that its next request with the same token is checked faster */
  readonly connection?: object
}

interface VerifiedLogin {
  readonly userId: string
  readonly passwordHash: string
}

/** Reads one cookie without a dependency: names are matched exactly, values kept as sent. */
function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  // Scanned in place: splitting the header into pieces showed in the single-object profile.
  for (let start = 0; start < header.length; ) {
    let end = header.indexOf(';', start)
    if (end === -1) end = header.length
    const eq = header.indexOf('=', start)
    if (eq !== -1 && eq < end && header.slice(start, eq).trim() === name) {
      const value = header.slice(eq + 1, end).trim()
      if (!value.includes('%')) return value
      try {
        return decodeURIComponent(value)
      } catch {
        return value
      }
    }
    start = end + 1
  }
  return undefined
}

/**
 * Turns a request's credentials into a Principal. Exactly one form is allowed:
 * the `authenticationToken` cookie (or a Bearer header, for clients that
 * cannot set cookies) or Basic username and password.
 */
export class Authenticator {
  readonly #directory: Directory
  readonly #tokens: TokenStore
  readonly #failureDelay: number
  // Verifying scrypt costs tens of milliseconds; scripts that send Basic on
  // every request would pay it each time. Successful logins are remembered,
  // keyed by an HMAC under a per-process key, and only while the stored hash
  // is unchanged, so a password change ends them at once.
  readonly #verified = new LRUCache<string, VerifiedLogin>({ max: 1000, ttl: 5 * 60_000 })
  readonly #cacheKey = randomBytes(32)
  readonly #pending = new Map<string, Promise<unknown>>()
  #dummyHash: Promise<string> | undefined

  constructor(directory: Directory, tokens: TokenStore, options: { failureDelay: number }) {
    this.#directory = directory
    this.#tokens = tokens
    this.#failureDelay = options.failureDelay
  }

  /**
   * undefined when the request carries no credentials at all. A token is
   * checked synchronously (remembered by hash); only a password may have to wait.
   */
  authenticate(credentials: Credentials): Principal | undefined | Promise<Principal> {
    const cookieToken = readCookie(credentials.cookie, 'authenticationToken') ?? readCookie(credentials.cookie, 'token')
    const { authorization } = credentials
    if (cookieToken !== undefined && authorization !== undefined) {
      throw new KeelError(
        'AMBIGUOUS_CREDENTIALS',
        'Having multiple authentication methods is not supported, please choose one',
      )
    }
    if (cookieToken !== undefined) return this.#byToken(cookieToken, credentials.connection)
    if (authorization === undefined) return undefined

    const space = authorization.indexOf(' ')
    const scheme = space === -1 ? authorization : authorization.slice(0, space)
    const value = space === -1 ? '' : authorization.slice(space + 1).trim()
    if (value === '') throw new KeelError('MALFORMED_AUTHORIZATION', 'Malformed Authorization header')
    if (scheme.toLowerCase() === 'bearer') return this.#byToken(value, credentials.connection)
    if (scheme.toLowerCase() !== 'basic') {
      throw new KeelError('MALFORMED_AUTHORIZATION', `unsupported authorization scheme ${scheme}`)
    }
    const decoded = Buffer.from(value, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon === -1) throw new KeelError('MALFORMED_AUTHORIZATION', 'Malformed Authorization header')
    return this.#byPassword(decoded.slice(0, colon), decoded.slice(colon + 1))
  }

  #byToken(secret: string, connection: object | undefined): Principal {
    const userId = this.#tokens.resolve(secret, connection)
    const user = userId === undefined ? undefined : this.#directory.user(userId)
    if (user === undefined) throw invalidCredentials()
    return { id: user.id, email: user.email, permission: user.permission, via: 'token' }
  }

  async #byPassword(email: string, password: string): Promise<Principal> {
    if (password === '') throw invalidCredentials()
    const stored = this.#directory.credentialsOf(email)
    const cacheKey = createHmac('sha256', this.#cacheKey).update(email.toLowerCase()).update('\0').update(password).digest('base64url')
    const remembered = this.#verified.get(cacheKey)
    if (stored !== undefined && remembered?.userId === stored.user.id && remembered.passwordHash === stored.passwordHash) {
      return { id: stored.user.id, email: stored.user.email, permission: stored.user.permission, via: 'password' }
    }
    // Attempts on one account run one after the other, and a failure holds
    // that queue for the delay: guessing is slowed per user, others are not.
    const key = email.toLowerCase()
    const previous = this.#pending.get(key) ?? Promise.resolve()
    const attempt = previous.then(async () => {
      const ok = await verifyPassword(password, stored?.passwordHash ?? (await this.#dummy()))
      if (!ok || stored === undefined) {
        await sleep(this.#failureDelay)
        throw invalidCredentials()
      }
      this.#verified.set(cacheKey, { userId: stored.user.id, passwordHash: stored.passwordHash })
      return { id: stored.user.id, email: stored.user.email, permission: stored.user.permission, via: 'password' } as const
    })
    const settled = attempt.catch(() => {})
    this.#pending.set(key, settled)
    void settled.then(() => {
      if (this.#pending.get(key) === settled) this.#pending.delete(key)
    })
    return attempt
  }

  /** Unknown accounts cost the same scrypt work as known ones, so timing does not reveal which emails exist. */
  #dummy(): Promise<string> {
    this.#dummyHash ??= hashPassword(randomBytes(16).toString('hex'))
    return this.#dummyHash
  }
}
