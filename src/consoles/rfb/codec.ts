import { RfbProtocolError } from './errors.js'
import { decodePixelFormat, encodePixelFormat, PIXEL_FORMAT_SIZE, type PixelFormat } from './pixel-format.js'

/** RFC 6143 §7.1.1: the one version this server speaks; a 3.3 or 3.7 client is answered as the RFC allows, by closing. */
export const PROTOCOL_VERSION = 'RFB 003.008\n'
export const VERSION_SIZE = 12
export const SECURITY_NONE = 1
export const ENCODING_RAW = 0

/** RFC 6143 §7.5: what a client sends once initialised. */
export type ClientMessage =
  | { readonly type: 'set-pixel-format'; readonly format: PixelFormat }
  | { readonly type: 'set-encodings'; readonly encodings: readonly number[] }
  | { readonly type: 'update-request'; readonly incremental: boolean; readonly x: number; readonly y: number; readonly width: number; readonly height: number }
  | { readonly type: 'key'; readonly down: boolean; readonly keysym: number }
  | { readonly type: 'pointer'; readonly buttons: number; readonly x: number; readonly y: number }
  | { readonly type: 'cut-text'; readonly length: number }

export interface Decoded<T> {
  readonly value: T
  /** bytes the value took */
  readonly size: number
}

export interface CodecLimits {
  /** SetEncodings entries, at most */
  readonly maxEncodings: number
  /** ClientCutText bytes, at most (the text is read past and dropped) */
  readonly maxCutText: number
}

/** The client's ProtocolVersion, undefined until 12 bytes are there. */
export function decodeVersion(bytes: Buffer): Decoded<string> | undefined {
  if (bytes.length < VERSION_SIZE) return undefined
  const version = bytes.toString('latin1', 0, VERSION_SIZE)
  if (!/^RFB \d{3}\.\d{3}\n$/.test(version)) throw new RfbProtocolError('not an RFB protocol version')
  return { value: version, size: VERSION_SIZE }
}

/**
 * One client message from the start of `bytes`, undefined while it is not
 * all there. Lengths a client states are checked before anything waits for
 * them, so a client cannot make the server hold more than its bounds.
 */
export function decodeClientMessage(bytes: Buffer, limits: CodecLimits): Decoded<ClientMessage> | undefined {
  const type = bytes[0]
  if (type === undefined) return undefined
  switch (type) {
    case 0:
      if (bytes.length < 4 + PIXEL_FORMAT_SIZE) return undefined
      return { value: { type: 'set-pixel-format', format: decodePixelFormat(bytes, 4) }, size: 4 + PIXEL_FORMAT_SIZE }
    case 2: {
      if (bytes.length < 4) return undefined
      const count = bytes.readUInt16BE(2)
      if (count > limits.maxEncodings) throw new RfbProtocolError(`SetEncodings lists ${count} encodings, more than ${limits.maxEncodings}`)
      const size = 4 + count * 4
      if (bytes.length < size) return undefined
      const encodings = Array.from({ length: count }, (_, index) => bytes.readInt32BE(4 + index * 4))
      return { value: { type: 'set-encodings', encodings }, size }
    }
    case 3:
      if (bytes.length < 10) return undefined
      return {
        value: { type: 'update-request', incremental: bytes.readUInt8(1) !== 0, x: bytes.readUInt16BE(2), y: bytes.readUInt16BE(4), width: bytes.readUInt16BE(6), height: bytes.readUInt16BE(8) },
        size: 10,
      }
    case 4:
      if (bytes.length < 8) return undefined
      return { value: { type: 'key', down: bytes.readUInt8(1) !== 0, keysym: bytes.readUInt32BE(4) }, size: 8 }
    case 5:
      if (bytes.length < 6) return undefined
      return { value: { type: 'pointer', buttons: bytes.readUInt8(1), x: bytes.readUInt16BE(2), y: bytes.readUInt16BE(4) }, size: 6 }
    case 6: {
      if (bytes.length < 8) return undefined
      const length = bytes.readUInt32BE(4)
      if (length > limits.maxCutText) throw new RfbProtocolError(`ClientCutText of ${length} bytes, more than ${limits.maxCutText}`)
      if (bytes.length < 8 + length) return undefined
      return { value: { type: 'cut-text', length }, size: 8 + length }
    }
    default:
      throw new RfbProtocolError(`unknown client message type ${type}`)
  }
}

/** The security types offered (§7.1.2). */
export function encodeSecurityTypes(types: readonly number[]): Buffer {
  return Buffer.from([types.length, ...types])
}

/** SecurityResult (§7.1.3): 0 is OK. */
export function encodeSecurityResult(ok: boolean): Buffer {
  const bytes = Buffer.alloc(4)
  bytes.writeUInt32BE(ok ? 0 : 1)
  return bytes
}

/** ServerInit (§7.3.2). */
export function encodeServerInit(width: number, height: number, format: PixelFormat, name: string): Buffer {
  const nameBytes = Buffer.from(name, 'utf8')
  const head = Buffer.alloc(4)
  head.writeUInt16BE(width, 0)
  head.writeUInt16BE(height, 2)
  const length = Buffer.alloc(4)
  length.writeUInt32BE(nameBytes.length)
  return Buffer.concat([head, encodePixelFormat(format), length, nameBytes])
}

export interface RawRectangle {
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
  /** the rectangle's pixels, row by row, already in the client's pixel format */
  readonly pixels: Buffer
}

/** A FramebufferUpdate (§7.6.1) of Raw rectangles, as one buffer. */
export function encodeFramebufferUpdate(rectangles: readonly RawRectangle[]): Buffer {
  const head = Buffer.alloc(4)
  head.writeUInt8(0, 0)
  head.writeUInt16BE(rectangles.length, 2)
  const parts: Buffer[] = [head]
  for (const rectangle of rectangles) {
    const header = Buffer.alloc(12)
    header.writeUInt16BE(rectangle.x, 0)
    header.writeUInt16BE(rectangle.y, 2)
    header.writeUInt16BE(rectangle.width, 4)
    header.writeUInt16BE(rectangle.height, 6)
    header.writeInt32BE(ENCODING_RAW, 8)
    parts.push(header, rectangle.pixels)
  }
  return Buffer.concat(parts)
}

/** Bell (§7.6.3). */
export const BELL = Buffer.from([2])
