import type { Transform } from 'node:stream'
import { decompressor } from '../src/formats/compression.js'

/** The per-byte transforms a worker can run, by name. */
export type PipelineFactory = () => Transform | Promise<Transform>

export const pipelines: Readonly<Record<string, PipelineFactory>> = {
  'zstd-decompress': () => decompressor('zstd'),
  'gzip-decompress': () => decompressor('gzip'),
}
