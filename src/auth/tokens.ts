import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import type { Statement } from 'better-sqlite3'
import type { ListedTokenSchema, TokenRecordSchema } from '../model/directory.js'
import type { Db } from '../store/database.js'
import { LRUCache } from 'lru-cache'
import { noSuchObject } from '../errors.js'

/** A new token; its `id` is the secret to present as the `authenticationToken` cookie. */
export type CreatedToken = Readonly<Static<typeof TokenRecordSchema>>
/** A token as listings show it: by its non-secret `identifier`. */
export type ListedToken = Readonly<Static<typeof ListedTokenSchema>>

interface TokenRow {
  secret_hash: string
  identifier: string
  user_id: string
  created_at: number
  expiration: number
  description: string | null
  client_id: string | null
}

// The one-shot form: a Hash object per request showed in the single-object profile.
const hashSecret = (secret: string): string => hash('sha256', secret, 'base64url')

/** What a valid token resolved to, while the store's `epoch` stays the same. */
export interface ResolvedToken {
  readonly userId: string
  readonly expiration: number
}

function toListed(row: TokenRow): ListedToken {
  return {
    identifier: row.identifier,
    user_id: row.user_id,
    created_at: row.created_at,
    expiration: row.expiration,
    ...(row.description === null ? {} : { description: row.description }),
    ...(row.client_id === null ? {} : { client: { id: row.client_id } }),
  }
}

/**
 * Authentication tokens. Only a SHA-256 of each secret is stored, so the
 * database alone never yields a usable token. Tokens bound to a `client.id`
 * must be handed out again on reuse, so their secret is derived from the
 * identifier with a key kept in its own file (`clientKey`) rather than stored.
 */
export class TokenStore {
  readonly #db: Db
  readonly #clientKey: Buffer
  readonly #clock: () => number
  // Resolving runs on every token-authenticated request: its statements are prepared once.
  readonly #lookup: Statement<[string], Pick<TokenRow, 'secret_hash' | 'user_id' | 'expiration'>>
  readonly #deleteByHash: Statement<[string]>
  // Every token-authenticated request resolves its token: the answer is remembered by hash, with the
  // token's expiration, until the token is revoked, pruned, or ended with its user's password.
  readonly #resolved = new LRUCache<string, ResolvedToken>({ max: 10_000 })
  #epoch = 0
  readonly #endListeners = new Set<(userId: string | undefined) => void>()

  constructor(db: Db, clientKey: Buffer, clock: () => number) {
    this.#db = db
    this.#clientKey = clientKey
    this.#clock = clock
    this.#lookup = db.prepare('SELECT secret_hash, user_id, expiration FROM tokens WHERE secret_hash = ?')
    this.#deleteByHash = db.prepare('DELETE FROM tokens WHERE secret_hash = ?')
  }

  create(input: { userId: string; validity: number; description?: string; clientId?: string }): CreatedToken {
    const now = this.#clock()
    const expiration = now + input.validity
    return this.#db.transaction((): CreatedToken => {
      if (input.clientId !== undefined) {
        const existing = this.#db
          .prepare('SELECT * FROM tokens WHERE user_id = ? AND client_id = ?')
          .get(input.userId, input.clientId) as TokenRow | undefined
        // Its expiration changes either way: what was remembered of it no longer holds.
        if (existing !== undefined) this.#forget(existing.secret_hash, input.userId)
        if (existing !== undefined && existing.expiration > now) {
          this.#db
            .prepare('UPDATE tokens SET expiration = ?, description = COALESCE(?, description) WHERE secret_hash = ?')
            .run(expiration, input.description ?? null, existing.secret_hash)
          const row = { ...existing, expiration, description: input.description ?? existing.description }
          return { id: this.#clientSecret(existing.identifier), ...toListed(row) }
        }
        if (existing !== undefined) this.#deleteByHash.run(existing.secret_hash)
      }
      const identifier = randomBytes(12).toString('base64url')
      const secret = input.clientId === undefined ? randomBytes(32).toString('base64url') : this.#clientSecret(identifier)
      const row: TokenRow = {
        secret_hash: hashSecret(secret),
        identifier,
        user_id: input.userId,
        created_at: now,
        expiration,
        description: input.description ?? null,
        client_id: input.clientId ?? null,
      }
      this.#db
        .prepare(
          `INSERT INTO tokens (secret_hash, identifier, user_id, created_at, expiration, description, client_id)
           VALUES (@secret_hash, @identifier, @user_id, @created_at, @expiration, @description, @client_id)`,
        )
        .run(row)
      return { id: secret, ...toListed(row) }
    })()
  }

  /**
   * Moves whenever any token is created again, revoked, pruned or ended with its user's password:
   * what was resolved under another epoch may no longer hold.
   */
  get epoch(): number {
    return this.#epoch
  }

  /** Whether a token resolved under `epoch` still holds now: nothing changed since, and it has not expired. */
  holds(resolved: ResolvedToken, epoch: number): boolean {
    return epoch === this.#epoch && resolved.expiration > this.#clock()
  }

  /** The owner and expiration of a valid, unexpired token, or undefined. */
  resolve(secret: string): ResolvedToken | undefined {
    const hash = hashSecret(secret)
    let known = this.#resolved.get(hash)
    if (known === undefined) {
      const row = this.#lookup.get(hash)
      if (row === undefined) return undefined
      // The index lookup already matched; the explicit comparison keeps the check constant-time by construction.
      if (!timingSafeEqual(Buffer.from(row.secret_hash), Buffer.from(hash))) return undefined
      known = { userId: row.user_id, expiration: row.expiration }
      this.#resolved.set(hash, known)
    }
    if (known.expiration <= this.#clock()) {
      this.#deleteByHash.run(hash)
      this.#forget(hash, known.userId)
      return undefined
    }
    return known
  }

  /** Calls `listener` whenever a token may have ended, with its user (undefined: possibly anyone's); returns its removal. */
  onEnd(listener: (userId: string | undefined) => void): () => void {
    this.#endListeners.add(listener)
    return () => this.#endListeners.delete(listener)
  }

  /** Forgets what was remembered of a user's tokens, after they were ended elsewhere (a password change). */
  forgetUser(userId: string): void {
    this.#epoch++
    for (const [hash, known] of this.#resolved.entries()) if (known.userId === userId) this.#resolved.delete(hash)
    this.#ended(userId)
  }

  #forget(hash: string, userId: string): void {
    this.#epoch++
    this.#resolved.delete(hash)
    this.#ended(userId)
  }

  #ended(userId: string | undefined): void {
    for (const listener of this.#endListeners) listener(userId)
  }

  list(userId: string): ListedToken[] {
    const rows = this.#db
      .prepare('SELECT * FROM tokens WHERE user_id = ? AND expiration > ? ORDER BY created_at, identifier')
      .all(userId, this.#clock()) as TokenRow[]
    return rows.map(toListed)
  }

  revoke(userId: string, identifier: string): void {
    const row = this.#db.prepare('SELECT secret_hash FROM tokens WHERE user_id = ? AND identifier = ?').get(userId, identifier) as
      | Pick<TokenRow, 'secret_hash'>
      | undefined
    if (row === undefined) throw noSuchObject(identifier, 'authentication token')
    this.#deleteByHash.run(row.secret_hash)
    this.#forget(row.secret_hash, userId)
  }

  /** Revokes the token of this secret, if there is one (signing out). */
  revokeSecret(secret: string): void {
    const hash = hashSecret(secret)
    const row = this.#db.prepare('SELECT user_id FROM tokens WHERE secret_hash = ?').get(hash) as Pick<TokenRow, 'user_id'> | undefined
    if (row === undefined) return
    this.#deleteByHash.run(hash)
    this.#forget(hash, row.user_id)
  }

  pruneExpired(): number {
    this.#epoch++
    this.#resolved.clear()
    const pruned = this.#db.prepare('DELETE FROM tokens WHERE expiration <= ?').run(this.#clock()).changes
    this.#ended(undefined)
    return pruned
  }

  #clientSecret(identifier: string): string {
    return createHmac('sha256', this.#clientKey).update(identifier).digest('base64url')
  }
}
