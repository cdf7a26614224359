import type { ChunkPool } from '../http/chunk-pool.js'

/** A chunk is sent once it holds this many bytes. */
export const BATCH = 65536

const OPEN = 0x5b
const COMMA = 0x2c
const CLOSE = 0x5d
const NEWLINE = 0x0a

/**
 * Where chunks are filled, shared by every listing: a chunk is filled between
 * two yields, without a pause, and copied out before the yield. An item of
 * less than a batch always fits after less than a batch.
 */
const scratch = Buffer.allocUnsafeSlow(2 * BATCH)

/**
 * Frames items as a JSON array or as NDJSON lines, in chunks of at least
 * BATCH bytes (the last one aside), each item copied once with
 * `Uint8Array#set` and its separator written as one byte: Buffer.concat over
 * a list of items and separators cost about two copies' worth of calls per
 * record (bench/RESULTS.md). With a pool, the chunks are the pool's, to be
 * released once sent.
 */
export function* framed(items: Iterable<Buffer>, ndjson: boolean, pool?: ChunkPool): Generator<Buffer, void, undefined> {
  const copy = (parts: readonly Buffer[], size: number): Buffer => pool?.join(parts, size) ?? Buffer.concat(parts, size)
  let at = 0
  if (!ndjson) scratch[at++] = OPEN
  let first = true
  for (const item of items) {
    if (item.length >= BATCH) {
      // Too large for the scratch buffer: this chunk is made of what is there and the item.
      const separator = ndjson ? [] : first ? [] : [Buffer.of(COMMA)]
      const parts = [scratch.subarray(0, at), ...separator, item, ...(ndjson ? [Buffer.of(NEWLINE)] : [])]
      const size = parts.reduce((sum, part) => sum + part.length, 0)
      first = false
      at = 0
      yield copy(parts, size)
      continue
    }
    if (!ndjson && !first) scratch[at++] = COMMA
    scratch.set(item, at)
    at += item.length
    if (ndjson) scratch[at++] = NEWLINE
    first = false
    if (at >= BATCH) {
      const chunk = copy([scratch.subarray(0, at)], at)
      at = 0
      yield chunk
    }
  }
  if (!ndjson) scratch[at++] = CLOSE
  yield copy([scratch.subarray(0, at)], at)
}
