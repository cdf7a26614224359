import type { IncomingMessage } from 'node:http'
import { requestBody } from './continue.js'

/** Body bytes between two collections of the young generation. */
export const COLLECT_EVERY = 4 * 1024 * 1024

/**
 * The body of a disk or VM upload. node:http copies each chunk it receives
 * into memory of its own, freed only when a collection finds the chunk dead,
 * and the few objects an upload allocates per chunk rarely start one: dead
 * chunks piled up to V8's 64 MiB external-memory limit, and glibc kept the
 * heap they had grown. A young-generation collection every 4 MiB (`gc`, which
 * the service exposes: cli/node-flags.ts) bounds them to that. Measured on a
 * 4 GiB raw import alone: peak RSS 105–107 MiB instead of 122, Keel's RSS
 * after it 97–106 MiB instead of 98–129, and the import 1.5 times faster (its
 * chunks are reused while still in cache).
 */
export async function* uploadBody(req: IncomingMessage): AsyncGenerator<Buffer> {
  const collect = globalThis.gc
  let since = 0
  for await (const chunk of requestBody(req)) {
    yield chunk
    since += chunk.length
    if (collect !== undefined && since >= COLLECT_EVERY) {
      since = 0
      collect({ type: 'minor' })
    }
  }
}
