import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto'

const scrypt = (password: string, salt: Buffer, length: number, options: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) =>
    scryptCallback(password, salt, length, options, (error, key) => (error ? reject(error) : resolve(key))),
  )

// OWASP's scrypt floor (N=2^17, r=8, p=1) costs ~128 MiB per hash; 2^15 keeps a
// login under ~60 ms on this 2-core class of machine while staying memory-hard.
const params = { N: 2 ** 15, r: 8, p: 1, keyLength: 32 }

/** `scrypt$N$r$p$salt$key`, salt and key in base64url: self-describing so parameters can rise later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, params.keyLength, {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r,
  })
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = encoded.split('$')
  if (scheme !== 'scrypt' || salt === undefined || key === undefined) return false
  const expected = Buffer.from(key, 'base64url')
  const N = Number(n)
  const R = Number(r)
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N,
    r: R,
    p: Number(p),
    maxmem: 256 * N * R,
  })
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}
