import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createReadStream, rmSync, writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BLOCK_SIZE } from '../src/formats/blocks.js'
import { compressor } from '../src/formats/compression.js'
import { encodeRawStream } from '../src/formats/raw/raw-encoder.js'
import { encodeVhdStream, planVhdStream } from '../src/formats/vhd/stream-encoder.js'
import { xxhashMember } from '../src/formats/xva/chunk-checksum.js'
import { WorkerPool } from '../workers/pool.js'

export interface FormatsResult {
  readonly name: string
  readonly mibPerSecond: number
}

const MiB = 1024 * 1024

/** The notes' "mixed" set: alternating random and zero 1 MiB halves, so half the bytes compress away. */
function mixedBlock(): Buffer {
  const block = Buffer.alloc(BLOCK_SIZE)
  randomBytes(MiB).copy(block)
  return block
}

async function timed(name: string, bytes: number, run: () => Promise<void>): Promise<FormatsResult> {
  await run()
  let best = Infinity
  for (let i = 0; i < 3; i++) {
    const start = process.hrtime.bigint()
    await run()
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9)
  }
  return { name, mibPerSecond: bytes / MiB / best }
}

function timedCommand(name: string, bytes: number, command: string): FormatsResult {
  let best = Infinity
  for (let i = 0; i < 3; i++) {
    const start = process.hrtime.bigint()
    const result = spawnSync('sh', ['-c', command])
    if (result.status !== 0) throw new Error(`${command}: ${result.stderr.toString()}`)
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9)
  }
  return { name, mibPerSecond: bytes / MiB / best }
}

const sink = (): Writable =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback()
    },
  })

/**
 * Codec throughput on a disk of `sizeMiB`, every block allocated with mixed
 * content (8 distinct blocks cycled, so the source costs nothing), against the
 * CLI tools on the same bytes. All figures are MiB/s of disk content.
 */
export async function formatsBench(sizeMiB = 512): Promise<FormatsResult[]> {
  const size = sizeMiB * MiB
  const pattern = Array.from({ length: 8 }, mixedBlock)
  const allocated = Array.from({ length: size / BLOCK_SIZE }, (_, i) => i)
  const blocks = async function* () {
    for (const index of allocated) yield { index, data: pattern[index % pattern.length] as Buffer }
  }
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-formats-'))
  const file = join(dir, 'disk.raw')
  writeFileSync(file, Buffer.concat(allocated.map((i) => pattern[i % pattern.length] as Buffer)))
  const pool = new WorkerPool({ size: 1 })
  try {
    const results: FormatsResult[] = []
    results.push(timedCommand('cat of the raw bytes (reference)', size, `cat ${file} > /dev/null`))
    results.push(
      await timed('raw encode (codec overhead only: blocks pass by reference)', size, async () => {
        await pipeline(Readable.from(encodeRawStream({ size, allocated, blocks: blocks() })), sink())
      }),
    )
    results.push(
      await timed('VHD encode (codec overhead only: blocks pass by reference)', size, async () => {
        const plan = planVhdStream({ size, allocated, uuid: '00000000-0000-4000-8000-000000000001' })
        await pipeline(Readable.from(encodeVhdStream(plan, blocks())), sink())
      }),
    )
    results.push(timedCommand('zstd -1 CLI (reference)', size, `zstd -1 -q -c ${file} > /dev/null`))
    results.push(
      await timed('zstd level 1, main thread', size, async () => {
        await pipeline(Readable.from(encodeRawStream({ size, allocated, blocks: blocks() })), compressor('zstd'), sink())
      }),
    )
    // What an XVA import runs: the CLI's zstd decompressed in the worker pool, read from the file.
    const compressed = `${file}.zst`
    const written = spawnSync('zstd', ['-1', '-q', '-f', '-o', compressed, file])
    if (written.status !== 0) throw new Error(`zstd -1: ${written.stderr.toString()}`)
    results.push(timedCommand('zstd -d CLI (reference)', size, `zstd -d -q -c ${compressed} > /dev/null`))
    results.push(
      await timed('zstd decompression, worker pool', size, async () => {
        await pipeline(createReadStream(compressed, { highWaterMark: MiB }), pool.transform('zstd-decompress'), sink())
      }),
    )
    results.push(timedCommand('xxhsum -H64 CLI (reference)', size, `xxhsum -H64 ${file} > /dev/null`))
    // What an XVA export runs for each 1 MiB chunk (in its worker, here on the main thread).
    results.push(
      await timed('XXH64 of each 1 MiB chunk', size, async () => {
        for await (const { data } of blocks()) {
          xxhashMember(data.subarray(0, MiB))
          xxhashMember(data.subarray(MiB))
        }
      }),
    )
    return results
  } finally {
    await pool.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
