import { RfbProtocolError } from './errors.js'

/** How a client wants pixels written (RFC 6143 §7.4). */
export interface PixelFormat {
  readonly bitsPerPixel: 8 | 16 | 32
  readonly depth: number
  readonly bigEndian: boolean
  readonly trueColour: boolean
  readonly redMax: number
  readonly greenMax: number
  readonly blueMax: number
  readonly redShift: number
  readonly greenShift: number
  readonly blueShift: number
}

export const PIXEL_FORMAT_SIZE = 16

/** The server's own: 32-bit true colour, little-endian, as noVNC and most viewers ask anyway. */
export const DEFAULT_PIXEL_FORMAT: PixelFormat = {
  bitsPerPixel: 32,
  depth: 24,
  bigEndian: false,
  trueColour: true,
  redMax: 255,
  greenMax: 255,
  blueMax: 255,
  redShift: 16,
  greenShift: 8,
  blueShift: 0,
}

export function encodePixelFormat(format: PixelFormat): Buffer {
  const bytes = Buffer.alloc(PIXEL_FORMAT_SIZE)
  bytes.writeUInt8(format.bitsPerPixel, 0)
  bytes.writeUInt8(format.depth, 1)
  bytes.writeUInt8(format.bigEndian ? 1 : 0, 2)
  bytes.writeUInt8(format.trueColour ? 1 : 0, 3)
  bytes.writeUInt16BE(format.redMax, 4)
  bytes.writeUInt16BE(format.greenMax, 6)
  bytes.writeUInt16BE(format.blueMax, 8)
  bytes.writeUInt8(format.redShift, 10)
  bytes.writeUInt8(format.greenShift, 11)
  bytes.writeUInt8(format.blueShift, 12)
  return bytes
}

/**
 * A client's SetPixelFormat, refused unless it is true colour (a colour map
 * would need SetColourMapEntries, which no current viewer asks for) with
 * shifts and maxima that fit its pixel size.
 */
export function decodePixelFormat(bytes: Buffer, offset: number): PixelFormat {
  const bitsPerPixel = bytes.readUInt8(offset)
  if (bitsPerPixel !== 8 && bitsPerPixel !== 16 && bitsPerPixel !== 32) throw new RfbProtocolError(`unsupported bits per pixel ${bitsPerPixel}`)
  const format: PixelFormat = {
    bitsPerPixel,
    depth: bytes.readUInt8(offset + 1),
    bigEndian: bytes.readUInt8(offset + 2) !== 0,
    trueColour: bytes.readUInt8(offset + 3) !== 0,
    redMax: bytes.readUInt16BE(offset + 4),
    greenMax: bytes.readUInt16BE(offset + 6),
    blueMax: bytes.readUInt16BE(offset + 8),
    redShift: bytes.readUInt8(offset + 10),
    greenShift: bytes.readUInt8(offset + 11),
    blueShift: bytes.readUInt8(offset + 12),
  }
  if (!format.trueColour) throw new RfbProtocolError('colour-map pixel formats are not supported')
  const fits = (max: number, shift: number): boolean => max > 0 && (max & (max + 1)) === 0 && max * 2 ** shift < 2 ** bitsPerPixel
  if (!fits(format.redMax, format.redShift) || !fits(format.greenMax, format.greenShift) || !fits(format.blueMax, format.blueShift)) {
    throw new RfbProtocolError('a colour channel does not fit the pixel size')
  }
  return format
}

/** Converts 8-bit RGB triples into pixels of `format`. */
export function encodePixels(rgb: Uint8Array, format: PixelFormat): Buffer {
  const count = rgb.length / 3
  const size = format.bitsPerPixel / 8
  const out = Buffer.alloc(count * size)
  const scale = (value: number, max: number): number => (max === 255 ? value : Math.round((value * max) / 255))
  for (let index = 0; index < count; index++) {
    const red = scale(rgb[index * 3] ?? 0, format.redMax)
    const green = scale(rgb[index * 3 + 1] ?? 0, format.greenMax)
    const blue = scale(rgb[index * 3 + 2] ?? 0, format.blueMax)
    // Multiplication, not <<: a 32-bit pixel with a shift of 24 would turn negative.
    const pixel = red * 2 ** format.redShift + green * 2 ** format.greenShift + blue * 2 ** format.blueShift
    const at = index * size
    if (size === 4) {
      if (format.bigEndian) out.writeUInt32BE(pixel, at)
      else out.writeUInt32LE(pixel, at)
    } else if (size === 2) {
      if (format.bigEndian) out.writeUInt16BE(pixel, at)
      else out.writeUInt16LE(pixel, at)
    } else {
      out.writeUInt8(pixel, at)
    }
  }
  return out
}
