import { setImmediate } from 'node:timers/promises'
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
 * resolves to whether the whole body was handed to the socket.
 */
export async function streamChunks(
  res: ServerResponse,
  status: number,
  contentType: string,
  pieces: Iterable<string | Buffer>,
  /** let the event loop run between writes, so that other requests are answered while this body is produced */
  yieldBetweenWrites = false,
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
    const ok = res.write(batch.length === 1 ? bytes : Buffer.concat(batch, size))
    batch = []
    size = 0
    if (!ok) {
      await drained(res)
      if (res.destroyed) return false
    } else if (yieldBetweenWrites) {
      await setImmediate()
      if (res.destroyed) return false
    }
  }
  if (res.destroyed) return false
  res.end(Buffer.concat(batch, size))
  return true
}

export function sendJsonBytes(res: ServerResponse, status: number, bytes: Buffer, contentType = JSON_TYPE): void {
  // writeHead, not setHeader: on the hot path of single-object reads each setHeader call shows in the profile.
  if (res instanceof KeelResponse) res.writeBodyHead(status, contentType, bytes.length)
  else res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': bytes.length })
  res.end(bytes)
}

/** Resolves on 'drain' or 'close', whichever comes first, leaving no listener behind. */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}
