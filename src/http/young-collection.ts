/** Body bytes between two collections of the young generation. */
export const COLLECT_EVERY = 4 * 1024 * 1024

/**
 * A counter of the bytes of a body node:http receives, which collects the
 * young generation every COLLECT_EVERY of them (`gc`, which the service
 * exposes: cli/node-flags.ts; without it, nothing). node:http reads each
 * chunk into memory of its own and copies its body bytes into more, freed
 * only when a collection finds the chunk dead, and the few objects a stream
 * allocates per chunk rarely start one: dead chunks piled up to V8's 64 MiB
 * external-memory limit, which starts a full collection of the whole heap,
 * and glibc kept the heap they had grown. Call it once a chunk is dead.
 */
export function youngCollections(): (bytes: number) => void {
  const collect = globalThis.gc
  let since = 0
  return (bytes) => {
    since += bytes
    if (collect !== undefined && since >= COLLECT_EVERY) {
      since = 0
      collect({ type: 'minor' })
    }
  }
}
