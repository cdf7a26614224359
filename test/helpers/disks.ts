import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { BLOCK_SIZE, type DiskBlock } from '../../src/formats/blocks.js'
import { KeelError } from '../../src/errors.js'
import { missingTool } from './tools.js'

/** A recognizable, deterministic 2 MiB block: every 4-byte word holds seed and position. */
export function patternBlock(seed: number): Buffer {
  const data = Buffer.alloc(BLOCK_SIZE)
  for (let i = 0; i < BLOCK_SIZE; i += 4) data.writeUInt32BE((seed * 0x9e3779b1 + i) >>> 0, i)
  return data
}

export interface TestDisk {
  readonly size: number
  readonly allocated: number[]
  readonly data: Map<number, Buffer>
  blocks(only?: readonly number[]): AsyncIterable<DiskBlock>
}

export function testDisk(size: number, allocated: number[], seed = 1): TestDisk {
  const data = new Map(allocated.map((index) => [index, patternBlock(seed * 1000 + index)]))
  return {
    size,
    allocated,
    data,
    async *blocks(only = allocated) {
      for (const index of only) yield { index, data: data.get(index) as Buffer }
    },
  }
}

/** The expected raw content of a small disk. */
export function rawOf(disk: { size: number; data: Map<number, Buffer> }): Buffer {
  const raw = Buffer.alloc(disk.size)
  for (const [index, block] of disk.data) block.copy(raw, index * BLOCK_SIZE, 0, Math.min(BLOCK_SIZE, disk.size - index * BLOCK_SIZE))
  return raw
}

export async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of chunks) parts.push(Buffer.from(chunk))
  return Buffer.concat(parts)
}

/** Replays bytes in slices of `size` (odd sizes exercise chunk boundaries). */
export async function* sliced(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size)
}

export async function drain<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of items) out.push(item)
  return out
}

export function tempDir(): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'keel-formats-'))
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) }
}

/** Runs an outside tool to completion; throws naming the tool and its Debian package when it is not installed. */
export function run(command: string, args: string[], input?: Buffer): { status: number | null; stdout: Buffer; stderr: string } {
  const result = spawnSync(command, args, { input, maxBuffer: 256 * 1024 * 1024 })
  const outcome = { status: result.status, stdout: result.stdout, stderr: result.stderr?.toString() ?? '' }
  const missing = missingTool(command, { ...outcome, ...(result.error === undefined ? {} : { error: result.error }) })
  if (missing !== undefined) throw missing
  return outcome
}

/** The INVALID_DISK_STREAM KeelError a promise rejects with. */
export async function streamError(promise: Promise<unknown>): Promise<KeelError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof KeelError) return error
    throw error
  }
  throw new Error('expected an error')
}

export const VPC_OPTS = (file: string): string => `driver=vpc,force_size_calc=current_size,file.filename=${file}`

/** Every file below a folder, as sorted paths relative to it (none when it does not exist). */
export function filesUnder(root: string): string[] {
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else out.push(relative(root, path))
    }
  }
  if (existsSync(root)) walk(root)
  return out.sort()
}
