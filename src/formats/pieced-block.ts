import { BLOCK_SIZE, type DiskBlock } from './blocks.js'
import { blockPool } from './block-pool.js'
import { giveBack } from './lending.js'

/** `pieces` (`length` bytes together) as one buffer: the piece itself when there is one, else a copy; a whole block's copy comes from the pool. */
export function gathered(pieces: readonly Buffer[], length: number): Buffer {
  const [first] = pieces
  if (pieces.length === 1 && first !== undefined) return first
  // Its last user may give a pool block back.
  const result = length === BLOCK_SIZE ? blockPool.take() : Buffer.allocUnsafe(length)
  let copied = 0
  for (const piece of pieces) copied += piece.copy(result, copied)
  return result
}

/**
 * A block still in the pieces its stream brought it in. A consumer that only
 * sends the bytes on (a raw export) writes `pieces` as they are; `data`
 * gathers them into one buffer the first time it is read. Gathering a 2 MiB
 * block cost about 5 % of Keel's CPU on a raw export over XAPI (bench/RESULTS.md).
 */
export class PiecedBlock implements DiskBlock {
  #data: Buffer | undefined

  constructor(
    readonly index: number,
    readonly pieces: readonly Buffer[],
  ) {}

  get data(): Buffer {
    this.#data ??= gathered(this.pieces, BLOCK_SIZE)
    return this.#data
  }

  /** The buffer `data` gathered back to its pool; pieces never gathered hold none. */
  giveBack(): void {
    if (this.#data !== undefined) giveBack(this.#data)
  }
}

/** Gives a block's buffer back to whoever lent it, without gathering pieces to do so. */
export function giveBackBlock(block: DiskBlock): void {
  if (block instanceof PiecedBlock) block.giveBack()
  else giveBack(block.data)
}
