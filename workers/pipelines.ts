import { createHash } from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'
import xxhash from 'xxhash-addon'
import { compressor, decompressor } from '../src/formats/compression.js'

/**
 * The per-byte transforms a worker can run, by name. Each takes its options
 * from the main thread (structured-clonable values only).
 */
export type PipelineFactory = (options: Record<string, unknown>) => Transform | Promise<Transform>

const level = (options: Record<string, unknown>): number | undefined => (typeof options['level'] === 'number' ? options['level'] : undefined)

/** A transform that swallows its input and emits one digest at the end. */
function digestTransform(update: (chunk: Buffer) => void, digest: () => string): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      update(chunk)
      callback()
    },
    flush(callback: TransformCallback) {
      callback(null, Buffer.from(digest(), 'latin1'))
    },
  })
}

export const pipelines: Readonly<Record<string, PipelineFactory>> = {
  'zstd-compress': (options) => compressor('zstd', level(options)),
  'zstd-decompress': () => decompressor('zstd'),
  'gzip-compress': (options) => compressor('gzip', level(options)),
  'gzip-decompress': () => decompressor('gzip'),
  /** XXH64 seed 0 as 16 uppercase hex digits, the XVA `.xxhash` format */
  xxh64: () => {
    const hasher = new xxhash.XXHash64(Buffer.alloc(8))
    return digestTransform(
      (chunk) => hasher.update(chunk),
      () => hasher.digest().toString('hex').toUpperCase(),
    )
  },
  /** SHA-1 as 40 lowercase hex digits, the XVA `.checksum` format */
  sha1: () => {
    const hash = createHash('sha1')
    return digestTransform(
      (chunk) => hash.update(chunk),
      () => hash.digest('hex'),
    )
  },
}
