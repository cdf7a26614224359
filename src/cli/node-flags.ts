/**
 * V8 flags the service runs with: `keel serve` (the bin's shebang), `npm start` and the
 * benchmarks' Keel processes pass them; a test keeps the three in step.
 *
 * `--max-semi-space-size=4` (MiB; V8's default grows to 16 here): the young generation
 * otherwise stays at its start-up peak, 27 MiB of a 118 MiB idle process, which left disk
 * streams no room under 150 MiB. Measured on `GET /rest/v0/vms/<id>` under load: 4 MiB
 * answers as fast as the default, 2 MiB about 8% slower.
 *
 * `--expose-gc`: uploads collect the young generation every 4 MiB of body (http/upload-body.ts),
 * the one way to free the chunks node:http allocates for a body before tens of MiB of them pile up.
 *
 * `--initial-old-space-size=64 --heap-growing-percent=50`: the old generation's limit at least
 * 64 MiB and half above the live heap. V8 counts the Buffers a disk stream has in flight (more
 * than 25 MiB at times) against that limit, but sets the limit from the old generation's own
 * growth: after a quiet moment it fell to 1.1 times the live heap, 9 MiB above it at 20 VMs, and
 * a Keel then ran a full collection every 30 MiB of an export, for its whole life (2 to 4 times
 * the CPU per export; bench/RESULTS.md, issue 28). The floor covers small heaps, where half the
 * heap is not room enough; the fixed factor covers large ones.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--expose-gc', '--initial-old-space-size=64', '--heap-growing-percent=50']

/**
 * The environment the service runs with, passed the same ways as its flags.
 *
 * `MALLOC_MMAP_THRESHOLD_` (bytes): glibc serves larger allocations with their own mappings,
 * given back to the system when freed. Left dynamic, the threshold rises past 2 MiB after the
 * first disk block is freed, and blocks and request chunks then stay in the heap: Keel held
 * 113 MiB after one import instead of 100, and streams ran over 150 MiB (bench/RESULTS.md).
 */
export const SERVICE_ENV: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: '131072' }
