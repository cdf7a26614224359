import { createHash } from 'node:crypto'
import xxhash from 'xxhash-wasm'

type Hasher = Awaited<ReturnType<typeof xxhash>>
let hasher: Promise<Hasher> | undefined

/** XXH64, seed 0, as 16 uppercase hex digits: the `.xxhash` member of an XVA chunk (notes 2.4). */
export async function xxhashMember(data: Uint8Array): Promise<string> {
  hasher ??= xxhash()
  return (await hasher).h64Raw(data).toString(16).toUpperCase().padStart(16, '0')
}

/** SHA-1 as 40 lowercase hex digits: the older `.checksum` member. */
export function sha1Member(data: Uint8Array): string {
  return createHash('sha1').update(data).digest('hex')
}
