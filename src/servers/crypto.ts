import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const VERSION = 'v1'

/** Where the key of the servers' credentials lives: beside the database, never inside it. */
export const serversKeyFile = (dataDir: string): string => join(dataDir, 'servers.key')

/**
 * The key, made on first use (mode 0600, never replaced: a new key would make
 * every stored password unreadable). A key file of the wrong size stops the
 * start rather than be silently regenerated.
 */
export function loadServersKey(dataDir: string): Buffer {
  const file = serversKeyFile(dataDir)
  if (!existsSync(file)) writeFileSync(file, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' })
  if (statSync(file).size !== KEY_BYTES) throw new Error(`${file}: expected a key of ${KEY_BYTES} bytes`)
  return readFileSync(file)
}

/**
 * AES-256-GCM with a random IV per value. The entry's id is the associated
 * data, so a ciphertext copied onto another row does not decrypt there.
 */
export class SecretBox {
  readonly #loadKey: () => Buffer
  #key: Buffer | undefined

  /** The key is read (or made) when a value is first sealed or opened, so that a service without servers has no key file. */
  constructor(loadKey: () => Buffer) {
    this.#loadKey = loadKey
  }

  #keyBytes(): Buffer {
    if (this.#key === undefined) {
      const key = this.#loadKey()
      if (key.length !== KEY_BYTES) throw new Error(`a servers key has ${KEY_BYTES} bytes`)
      this.#key = key
    }
    return this.#key
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.#keyBytes(), iv)
    cipher.setAAD(Buffer.from(context))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`
  }

  /** Throws when the value was not sealed with this key and context (a replaced key file, a tampered row). */
  open(sealed: string, context: string): string {
    const [version, payload] = sealed.split(':')
    if (version !== VERSION || payload === undefined) throw new Error('not a sealed value of this version')
    const bytes = Buffer.from(payload, 'base64')
    const decipher = createDecipheriv('aes-256-gcm', this.#keyBytes(), bytes.subarray(0, IV_BYTES))
    decipher.setAAD(Buffer.from(context))
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
  }
}
