import type { ServerResponse } from 'node:http'
import { KeelResponse } from './response.js'

export const JSON_TYPE = 'application/json; charset=utf-8'
export const NDJSON_TYPE = 'application/x-ndjson'

export function sendJsonText(res: ServerResponse, status: number, text: string, headers?: Record<string, string>): void {
  res.statusCode = status
  res.setHeader('Content-Type', JSON_TYPE)
  res.setHeader('Content-Length', Buffer.byteLength(text))
  if (headers !== undefined) for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  res.end(text)
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers?: Record<string, string>): void {
  sendJsonText(res, status, JSON.stringify(value), headers)
}

/** 201 `{id}` with the new object's Location, as every creation answers. */
export function sendCreated(res: ServerResponse, id: string, location: string): void {
  sendJson(res, 201, { id }, { Location: location })
}

export function sendNoContent(res: ServerResponse): void {
  res.statusCode = 204
  res.end()
}

export function redirect(res: ServerResponse, status: 302 | 307 | 308, location: string): void {
  res.statusCode = status
  res.setHeader('Location', location)
  res.setHeader('Content-Length', 0)
  res.end()
}

/**
 * Writes pieces as they come, waiting for 'drain' whenever the socket buffer
 * is full, so a large listing never sits in memory whole. Pieces are
 * coalesced into ~64 KiB writes: one write per record would cost more than
 * the serialization the cache saves. Stops early if the client goes away;
 * resolves to whether the whole body was handed to the socket. `release`
 * gets back each piece once the socket has taken it (or it was copied), so
 * that its buffer can be reused.
 */
export async function streamChunks(
  res: ServerResponse,
  status: number,
  contentType: string,
  pieces: Iterable<string | Buffer>,
  /** awaited after each write, so that other requests are answered while this body is produced */
  turn?: () => Promise<void>,
  release?: (piece: Buffer) => void,
): Promise<boolean> {
  res.statusCode = status
  res.setHeader('Content-Type', contentType)
  let batch: Buffer[] = []
  let size = 0
  for (const piece of pieces) {
    const bytes = typeof piece === 'string' ? Buffer.from(piece) : piece
    batch.push(bytes)
    size += bytes.length
    if (size < 65536) continue
    if (res.destroyed) return false
    const ok = batch.length === 1 ? res.write(bytes, written(bytes, release)) : res.write(joined(batch, size, release))
    batch = []
    size = 0
    if (!ok) await drained(res)
    if (turn !== undefined) await turn()
    if (res.destroyed) return false
  }
  if (res.destroyed) return false
  if (batch.length === 1 && batch[0] !== undefined) res.end(batch[0], written(batch[0], release))
  else res.end(joined(batch, size, release))
  return true
}

/** A write's callback that gives the piece back once the socket has taken it; none without `release`. */
function written(piece: Buffer, release: ((piece: Buffer) => void) | undefined): ((error?: Error | null) => void) | undefined {
  return release === undefined ? undefined : (error) => {
    if (error == null) release(piece)
  }
}

/** The pieces copied into one buffer; they are free again at once. */
function joined(pieces: readonly Buffer[], size: number, release: ((piece: Buffer) => void) | undefined): Buffer {
  const bytes = Buffer.concat(pieces, size)
  if (release !== undefined) for (const piece of pieces) release(piece)
  return bytes
}

/** Slices of a large body written per turn of the event loop: a few socket buffers' worth. */
const SLICE = 256 * 1024

/**
 * Sends a whole body that is already in memory in bounded slices, awaiting
 * `turn` between them, instead of one write that the socket then drains on
 * its own: other requests are read and answered between slices. Resolves
 * once the last byte is handed to the kernel ('finish') or the client is gone.
 */
export async function sendLargeBody(res: ServerResponse, status: number, bytes: Buffer, contentType: string, turn: () => Promise<void>): Promise<void> {
  res.statusCode = status
  res.setHeader('Content-Type', contentType)
  res.setHeader('Content-Length', bytes.length)
  let offset = 0
  for (; offset + SLICE < bytes.length; offset += SLICE) {
    if (res.destroyed) return
    if (!res.write(bytes.subarray(offset, offset + SLICE))) await drained(res)
    await turn()
  }
  if (res.destroyed) return
  const sent = firstOf(res, 'finish', 'close')
  res.end(bytes.subarray(offset))
  await sent
}

export function sendJsonBytes(res: ServerResponse, status: number, bytes: Buffer, contentType = JSON_TYPE): void {
  // writeHead, not setHeader: on the hot path of single-object reads each setHeader call shows in the profile.
  if (res instanceof KeelResponse) return res.sendWhole(status, contentType, bytes)
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': bytes.length })
  res.end(bytes)
}

/** Resolves on whichever of two events comes first, leaving no listener behind. */
function firstOf(res: ServerResponse, first: string, second: string): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off(first, done)
      res.off(second, done)
      resolve()
    }
    res.on(first, done)
    res.on(second, done)
  })
}

/** Resolves on 'drain' or 'close', whichever comes first, leaving no listener behind. */
export const drained = (res: ServerResponse): Promise<void> => firstOf(res, 'drain', 'close')
