import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { chunkPayload, type Chunk } from './chunk.js'
import type { Budgeted, StreamBudget } from './stream-budget.js'

/**
 * Flushes every outbox that has something to send, on one timer. Writing each
 * event as it comes costs a syscall per event and per client (peers notes
 * 2.4: about 10 µs of CPU a delivery, against 1.4 µs when coalesced).
 */
export class Flusher {
  readonly #interval: number
  readonly #dirty = new Set<Outbox>()
  #timer: NodeJS.Timeout | undefined

  constructor(interval: number) {
    this.#interval = interval
  }

  mark(outbox: Outbox): void {
    this.#dirty.add(outbox)
    this.#timer ??= setTimeout(() => this.flushAll(), this.#interval)
  }

  forget(outbox: Outbox): void {
    this.#dirty.delete(outbox)
  }

  flushAll(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    const dirty = [...this.#dirty]
    this.#dirty.clear()
    for (const outbox of dirty) outbox.flush()
  }

  close(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#dirty.clear()
  }
}

/** Why a connection was cut: its own backlog past its bound, or the largest while all of them passed theirs. */
export type CutReason = 'connection' | 'total'

export interface OutboxOptions {
  /** undelivered bytes allowed to this connection */
  readonly limit: number
  readonly flusher: Flusher
  /** the bound of all connections together */
  readonly budget: StreamBudget
  /** told once, before the response is destroyed */
  readonly onCut: (reason: CutReason, undelivered: number, total: number) => void
}

/**
 * What a long-lived response has yet to deliver. Bytes still queued here or in
 * the socket count against `limit` and against the shared budget; past
 * either, the response is destroyed, so one client that stops reading costs
 * at most that much memory, all of them at most the budget, and no other
 * client notices.
 *
 * Frames come framed as HTTP chunks, shared by every connection of an
 * audience, and go to the socket as they are: one `write` a flush for one
 * frame, one `writev` of the same Buffers for several, where writing through
 * the response framed each write again in four pieces (size, CRLF, data,
 * CRLF) and corked the socket until the next tick. A connection whose socket
 * holds more than it takes is not written to until it drains: meanwhile each
 * frame costs it a reference in `pending`, never a copy.
 */
export class Outbox implements Budgeted {
  readonly #res: ServerResponse
  readonly #options: OutboxOptions
  readonly #pending: Chunk[] = []
  #pendingBytes = 0
  #closed = false
  #draining = false
  /** end() was called before the response had its socket (behind another on the connection) */
  #ending = false
  /** an answer to HEAD: what would be written is dropped, as the response's own write would */
  readonly #bodyless: boolean

  constructor(res: ServerResponse, options: OutboxOptions) {
    this.#res = res
    this.#options = options
    this.#bodyless = res.req.method === 'HEAD'
    res.once('close', () => this.close())
    // A response queued behind another is given its socket once that one is done, its headers written right after.
    if (res.socket === null) res.once('socket', () => this.#options.flusher.mark(this))
  }

  undelivered(): number {
    return this.#closed ? 0 : this.#pendingBytes + this.#res.writableLength
  }

  push(frame: Chunk): void {
    if (this.#closed) return
    this.#pending.push(frame)
    this.#pendingBytes += frame.length
    const undelivered = this.undelivered()
    if (undelivered > this.#options.limit) {
      this.cut(undelivered, this.#options.budget.total, 'connection')
      return
    }
    if (!this.#draining) this.#options.flusher.mark(this)
    this.#options.budget.report(this, undelivered)
  }

  cut(undelivered: number, total: number, reason: CutReason = 'total'): void {
    if (this.#closed) return
    this.close()
    this.#options.onCut(reason, undelivered, total)
    this.#res.destroy()
  }

  /** Hands what is queued to the socket, unless the socket has yet to drain. */
  flush(): void {
    if (this.#closed || this.#draining) return
    const socket = this.#res.socket
    if (socket === null) return
    if (this.#pendingBytes > 0 && socket.writable) {
      // The socket keeps its own list of what it was handed: the array is emptied and used again.
      this.#write(socket, this.#pending)
      this.#pending.length = 0
      this.#pendingBytes = 0
      if (socket.writableNeedDrain) {
        this.#draining = true
        socket.once('drain', this.#drained)
      }
      this.#options.budget.report(this, this.undelivered())
    }
    if (this.#ending) this.#finish()
  }

  /** Sends what is queued, then ends the response. */
  end(): void {
    if (this.#closed) return
    this.#ending = true
    if (this.#res.socket === null) return
    this.#draining = false
    this.flush()
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#pending.length = 0
    this.#pendingBytes = 0
    this.#options.flusher.forget(this)
    this.#options.budget.forget(this)
  }

  #write(socket: Socket, frames: readonly Chunk[]): void {
    if (this.#bodyless) return
    // Without chunked encoding (an HTTP/1.0 client), the body is the payloads alone, up to the connection's end.
    const chunked = this.#res.chunkedEncoding
    if (frames.length === 1) {
      socket.write(chunked ? (frames[0] as Chunk) : chunkPayload(frames[0] as Chunk))
      return
    }
    socket.cork()
    for (const frame of frames) socket.write(chunked ? frame : chunkPayload(frame))
    socket.uncork()
  }

  #finish(): void {
    this.close()
    this.#res.end()
  }

  readonly #drained = (): void => {
    this.#draining = false
    if (this.#closed) return
    this.flush()
    this.#options.budget.report(this, this.undelivered())
  }
}
