import { createHash } from 'node:crypto'
import xxhash from 'xxhash-addon'

/**
 * XXH64, seed 0, as 16 uppercase hex digits: the `.xxhash` member of an XVA chunk (notes 2.4).
 * Native: xxhash-wasm copied each chunk into its memory first, 0.11 s more of the worker's CPU
 * per 4 GiB XVA export (bench/RESULTS.md).
 */
export function xxhashMember(data: Buffer): string {
  return xxhash.XXHash64.hash(data).toString('hex').toUpperCase()
}

/** SHA-1 as 40 lowercase hex digits: the older `.checksum` member. */
export function sha1Member(data: Uint8Array): string {
  return createHash('sha1').update(data).digest('hex')
}
