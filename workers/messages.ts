import type { ErrorCode } from '../src/error-codes.js'

/** The protocol between workers/pool.ts (main thread) and workers/pipeline-worker.ts. */
export type ToWorker =
  | { readonly type: 'open'; readonly id: number; readonly name: string; readonly options: Record<string, unknown> }
  | { readonly type: 'data'; readonly id: number; readonly chunk: Uint8Array }
  | { readonly type: 'end'; readonly id: number }
  /** the main side consumed this many output bytes */
  | { readonly type: 'ack'; readonly id: number; readonly bytes: number }
  | { readonly type: 'abort'; readonly id: number }

export interface SerializedError {
  readonly message: string
  readonly code?: ErrorCode
  readonly data?: Record<string, unknown>
}

export type FromWorker =
  /** this many input bytes went through the transform */
  | { readonly type: 'consumed'; readonly id: number; readonly bytes: number }
  | { readonly type: 'data'; readonly id: number; readonly chunk: Uint8Array }
  | { readonly type: 'end'; readonly id: number }
  | { readonly type: 'error'; readonly id: number; readonly error: SerializedError }

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
