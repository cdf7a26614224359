/** Body bytes between two collections of the young generation. */
export const COLLECT_EVERY = 4 * 1024 * 1024

/**
 * A body node:http receives, its dead chunks collected as it is read.
 * node:http reads each chunk into memory of its own (and copies a response's
 * body bytes into more), freed only when a collection finds the chunk dead,
 * and the few objects a stream allocates per chunk rarely start one: dead
 * chunks piled up to V8's 64 MiB external-memory limit, which starts a
 * collection of the whole heap, and glibc kept the heap they had grown. A
 * young-generation collection every COLLECT_EVERY bytes read (`gc`, which
 * the service exposes: cli/node-flags.ts; without it, none) bounds them to that.
 */
export async function* collectedAsRead<T extends Uint8Array>(chunks: AsyncIterable<T>): AsyncGenerator<T> {
  const collect = globalThis.gc
  let since = 0
  for await (const chunk of chunks) {
    yield chunk
    since += chunk.length
    if (collect !== undefined && since >= COLLECT_EVERY) {
      since = 0
      collect({ type: 'minor' })
    }
  }
}
