import {
  decodeClientMessage,
  decodeVersion,
  encodeFramebufferUpdate,
  encodeSecurityResult,
  encodeSecurityTypes,
  encodeServerInit,
  PROTOCOL_VERSION,
  SECURITY_NONE,
  type ClientMessage,
  type CodecLimits,
  type RawRectangle,
} from './codec.js'
import { RfbProtocolError } from './errors.js'
import { DEFAULT_PIXEL_FORMAT, encodePixels, type PixelFormat } from './pixel-format.js'
import type { Rectangle } from './text-screen.js'

/** What an RFB session shows and where its keys go. */
export interface Display {
  readonly name: string
  readonly width: number
  readonly height: number
  /** the areas changed since last asked */
  takeDirty(): Rectangle[]
  render(area: Rectangle): { readonly area: Rectangle; readonly rgb: Uint8Array }
  key(keysym: number, down: boolean): void
}

type Phase = 'version' | 'security' | 'init' | 'normal'

export const DEFAULT_CODEC_LIMITS: CodecLimits = { maxEncodings: 256, maxCutText: 65536 }

/**
 * The server side of one RFB 3.8 connection (RFC 6143), over any byte
 * transport: `receive` takes the client's bytes as they come, `send` is given
 * the server's. It offers security type None only: the transport (Keel's
 * WebSocket) is opened only by an authenticated caller allowed to use this
 * console, and a VNC password would add a weaker secret, not a check.
 *
 * Updates are sent only when asked (FramebufferUpdateRequest): a full area at
 * once, an incremental request when something changed, held until then.
 */
export class RfbSession {
  readonly #display: Display
  readonly #send: (bytes: Buffer) => void
  readonly #limits: CodecLimits
  #phase: Phase = 'version'
  #pending: Buffer = Buffer.alloc(0)
  #format: PixelFormat = DEFAULT_PIXEL_FORMAT
  /** an incremental request not answered yet */
  #waiting: Rectangle | undefined
  /** changed areas taken from the display and not yet sent */
  #dirty: Rectangle[] = []
  /** within `receive`: a reply the peer answers at once (in memory) is queued, not handled inside a message */
  #receiving = false

  constructor(display: Display, send: (bytes: Buffer) => void, limits: CodecLimits = DEFAULT_CODEC_LIMITS) {
    this.#display = display
    this.#send = send
    this.#limits = limits
  }

  /** Sends the server's ProtocolVersion, the first message of the protocol. */
  start(): void {
    this.#send(Buffer.from(PROTOCOL_VERSION, 'latin1'))
  }

  /** Takes the client's next bytes; throws RfbProtocolError when they break the protocol. */
  receive(bytes: Buffer): void {
    this.#pending = this.#pending.length === 0 ? bytes : Buffer.concat([this.#pending, bytes])
    if (this.#receiving) return
    this.#receiving = true
    try {
      for (;;) {
        const size = this.#step(this.#pending)
        if (size === 0) break
        this.#pending = this.#pending.subarray(size)
      }
    } finally {
      this.#receiving = false
    }
    this.refresh()
  }

  /** Answers a waiting incremental request if the display changed (call it after changing the display). */
  refresh(): void {
    const area = this.#waiting
    if (area === undefined) return
    const dirty = this.#takeDirty(area)
    if (dirty.length === 0) return
    this.#waiting = undefined
    this.#update(dirty)
  }

  /** Handles one message at the start of `bytes`; returns the bytes it took, 0 when it needs more. */
  #step(bytes: Buffer): number {
    switch (this.#phase) {
      case 'version': {
        const version = decodeVersion(bytes)
        if (version === undefined) return 0
        if (version.value !== PROTOCOL_VERSION) throw new RfbProtocolError(`unsupported protocol version ${version.value.trim()}`)
        this.#phase = 'security'
        this.#send(encodeSecurityTypes([SECURITY_NONE]))
        return version.size
      }
      case 'security': {
        const chosen = bytes[0]
        if (chosen === undefined) return 0
        if (chosen !== SECURITY_NONE) throw new RfbProtocolError(`security type ${chosen} was not offered`)
        this.#phase = 'init'
        this.#send(encodeSecurityResult(true))
        return 1
      }
      case 'init': {
        // The shared flag is moot: every session has a screen of its own.
        if (bytes.length < 1) return 0
        this.#phase = 'normal'
        const display = this.#display
        this.#send(encodeServerInit(display.width, display.height, this.#format, display.name))
        return 1
      }
      case 'normal': {
        const message = decodeClientMessage(bytes, this.#limits)
        if (message === undefined) return 0
        this.#handle(message.value)
        return message.size
      }
    }
  }

  #handle(message: ClientMessage): void {
    switch (message.type) {
      case 'set-pixel-format':
        this.#format = message.format
        return
      case 'update-request': {
        const area = intersect(message, { x: 0, y: 0, width: this.#display.width, height: this.#display.height })
        if (area === undefined) return
        if (message.incremental) {
          this.#waiting = area
          return
        }
        this.#waiting = undefined
        this.#takeDirty(area)
        this.#update([area])
        return
      }
      case 'key':
        this.#display.key(message.keysym, message.down)
        return
      // Raw, which every client takes, is all this server sends; pointer and clipboard have no use on a text console.
      case 'set-encodings':
      case 'pointer':
      case 'cut-text':
        return
    }
  }

  /** The changed parts of `area`, forgotten from then on; changes outside it stay for a later request. */
  #takeDirty(area: Rectangle): Rectangle[] {
    const all = [...this.#dirty, ...this.#display.takeDirty()]
    this.#dirty = all.filter((rectangle) => !contains(area, rectangle))
    return all.flatMap((rectangle) => intersect(rectangle, area) ?? [])
  }

  #update(areas: readonly Rectangle[]): void {
    const rectangles: RawRectangle[] = areas.map((wanted) => {
      const { area, rgb } = this.#display.render(wanted)
      return { ...area, pixels: encodePixels(rgb, this.#format) }
    })
    this.#send(encodeFramebufferUpdate(rectangles))
  }
}

function intersect(a: Rectangle, b: Rectangle): Rectangle | undefined {
  const x = Math.max(a.x, b.x)
  const y = Math.max(a.y, b.y)
  const right = Math.min(a.x + a.width, b.x + b.width)
  const bottom = Math.min(a.y + a.height, b.y + b.height)
  return right > x && bottom > y ? { x, y, width: right - x, height: bottom - y } : undefined
}

function contains(outer: Rectangle, inner: Rectangle): boolean {
  return inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.width <= outer.x + outer.width && inner.y + inner.height <= outer.y + outer.height
}
