import type { ErrorCode } from '../src/error-codes.js'
import type { XvaFile } from '../src/disks/xva.js'
import type { Compression } from '../src/formats/compression.js'
import type { XvaDescription } from '../src/formats/xva/description.js'

/** Opens an XVA encoding (workers/xva-job.ts); its blocks and output then go through shared slots. */
export interface XvaOpen {
  readonly type: 'xva-open'
  readonly id: number
  readonly description: XvaDescription
  readonly disks: ReadonlyArray<{ readonly size: number; readonly allocated: readonly number[] }>
  readonly compression: Compression
  /** the archive's timestamps, ms since the epoch */
  readonly now: number
  /** slots the main thread fills with blocks */
  readonly input: SharedArrayBuffer
  /** slots the worker fills with the archive */
  readonly output: SharedArrayBuffer
  /** whether to send the archive's MD5 at its end (a backup's `.xva.checksum`), taken here rather than on the main thread */
  readonly md5: boolean
  /**
   * the worker writes the archive into this file itself rather than posting
   * it, a plain archive's chunks straight from the input slots
   */
  readonly file?: XvaFile
}

/** The protocol between workers/pool.ts (main thread) and workers/pipeline-worker.ts. */
export type ToWorker =
  | { readonly type: 'open'; readonly id: number; readonly name: string }
  | { readonly type: 'data'; readonly id: number; readonly chunk: Uint8Array }
  | { readonly type: 'end'; readonly id: number }
  /** the main side consumed this many output bytes */
  | { readonly type: 'ack'; readonly id: number; readonly bytes: number }
  | { readonly type: 'abort'; readonly id: number }
  | XvaOpen
  /** block `index` of disk `disk` is in input slot `slot` */
  | { readonly type: 'xva-block'; readonly id: number; readonly disk: number; readonly index: number; readonly slot: number }
  /** the main thread has sent what output slot `slot` held */
  | { readonly type: 'xva-output-free'; readonly id: number; readonly slot: number }

export interface SerializedError {
  readonly message: string
  readonly code?: ErrorCode
  /** a system call's error code (ENOSPC, EIO), kept so that the main thread reports it as a local one */
  readonly errno?: string
  readonly data?: Record<string, unknown>
}

export type FromWorker =
  /** this many input bytes went through the transform */
  | { readonly type: 'consumed'; readonly id: number; readonly bytes: number }
  | { readonly type: 'data'; readonly id: number; readonly chunk: Uint8Array }
  | { readonly type: 'end'; readonly id: number }
  | { readonly type: 'error'; readonly id: number; readonly error: SerializedError }
  /** the worker is done with input slot `slot` */
  | { readonly type: 'xva-input-free'; readonly id: number; readonly slot: number }
  /**
   * the archive's next `length` bytes are at `offset` in output slot `slot`;
   * `last`: the worker writes no more into that slot until it is freed
   */
  | { readonly type: 'xva-output'; readonly id: number; readonly slot: number; readonly offset: number; readonly length: number; readonly last: boolean }
  /** the MD5 of the whole archive, as sent, just before its end */
  | { readonly type: 'xva-md5'; readonly id: number; readonly hex: string }
  /** the archive's size, once the worker wrote all of it into its file (XvaOpen.file), just before its end */
  | { readonly type: 'xva-written'; readonly id: number; readonly bytes: number }
  /** after an abort: the worker no longer touches the job's memory or file */
  | { readonly type: 'xva-stopped'; readonly id: number }

/** Below this size a copy costs less than it risks: small buffers are often shared constants or pool slices. */
const TRANSFER_THRESHOLD = 64 * 1024

/**
 * The view to post and what to transfer with it. A chunk spanning its whole
 * ArrayBuffer moves (the sender's view becomes empty); a view into a larger
 * buffer (Node's pool, a shared zero block, a slice of a socket read) is
 * copied once into a buffer of its own, which then moves.
 */
export function forTransfer(chunk: Uint8Array): { chunk: Uint8Array; transfer: ArrayBuffer[] } {
  const buffer = chunk.buffer
  if (buffer instanceof ArrayBuffer && chunk.byteOffset === 0 && chunk.byteLength === buffer.byteLength && chunk.byteLength >= TRANSFER_THRESHOLD) {
    return { chunk, transfer: [buffer] }
  }
  // Not zero-filled: every byte is written at once (a zero-fill was a third of this copy's cost).
  const copy = Buffer.allocUnsafeSlow(chunk.byteLength)
  copy.set(chunk)
  return { chunk: copy, transfer: [copy.buffer as ArrayBuffer] }
}
