import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { BLOCK_SIZE, type DiskBlock } from '../../formats/blocks.js'

/**
 * Blocks kept in a temporary file until a transfer can send them: XAPI's
 * upload handlers take no chunked body, so the exact length must be known
 * before the first byte, and nothing is sent before a session commits.
 * Memory holds only where each block is; a block written again replaces
 * the earlier one.
 */
export class BlockSpool {
  readonly #dir: string
  readonly #file: FileHandle
  readonly #offsets = new Map<number, number>()
  #end = 0

  private constructor(dir: string, file: FileHandle) {
    this.#dir = dir
    this.#file = file
  }

  static async create(parent: string): Promise<BlockSpool> {
    const dir = await mkdtemp(join(parent, 'keel-xapi-spool-'))
    return new BlockSpool(dir, await open(join(dir, 'blocks'), 'w+', 0o600))
  }

  /** ascending indexes of the blocks held */
  get indexes(): number[] {
    return [...this.#offsets.keys()].sort((a, b) => a - b)
  }

  has(index: number): boolean {
    return this.#offsets.has(index)
  }

  async put(index: number, data: Buffer): Promise<void> {
    const offset = this.#offsets.get(index) ?? this.#end
    await this.#file.write(data, 0, BLOCK_SIZE, offset)
    if (offset === this.#end) this.#end += BLOCK_SIZE
    this.#offsets.set(index, offset)
  }

  async get(index: number): Promise<Buffer> {
    const offset = this.#offsets.get(index)
    if (offset === undefined) throw new RangeError(`block ${index} is not spooled`)
    const data = Buffer.alloc(BLOCK_SIZE)
    await this.#file.read(data, 0, BLOCK_SIZE, offset)
    return data
  }

  /** `indexes` (held, ascending), read one at a time as the consumer asks. */
  async *blocks(indexes: readonly number[] = this.indexes): AsyncGenerator<DiskBlock> {
    for (const index of indexes) yield { index, data: await this.get(index) }
  }

  async remove(): Promise<void> {
    await this.#file.close().catch(() => undefined)
    await rm(this.#dir, { recursive: true, force: true })
  }
}
