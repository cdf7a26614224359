import { invalidDiskStream } from '../stream-error.js'
import { vhdChecksum } from './checksum.js'
import { DiskType, FILE_FORMAT_VERSION, FOOTER_COOKIE, FOOTER_SIZE, HEADER_OFFSET, VHD_EPOCH } from './constants.js'
import { geometryForSize, type Geometry } from './geometry.js'
import { uuidFromBytes, uuidToBytes } from './uuid.js'

export interface VhdFooter {
  readonly features: number
  readonly dataOffset: number
  /** seconds since 2000-01-01T00:00:00Z */
  readonly timestamp: number
  readonly creatorApplication: string
  readonly creatorVersion: number
  readonly creatorHostOs: number
  readonly originalSize: number
  readonly currentSize: number
  readonly geometry: Geometry
  readonly diskType: number
  readonly checksum: number
  readonly uuid: string
  readonly savedState: number
}

const CHECKSUM_OFFSET = 64
/** fixed disks have no dynamic header: all-ones on disk, -1 here */
export const NO_DATA_OFFSET = -1
const ALL_ONES_64 = 2n ** 64n - 1n

export interface NewFooter {
  readonly size: number
  readonly uuid: string
  readonly diskType: typeof DiskType.dynamic | typeof DiskType.differencing
  /** Unix milliseconds */
  readonly now?: number
}

/** The footer our producer writes: creator `xo  ` (notes 8), exact currentSize, 2000-epoch timestamp. */
export function newFooter({ size, uuid, diskType, now = Date.now() }: NewFooter): VhdFooter {
  return {
    features: 2,
    dataOffset: HEADER_OFFSET,
    timestamp: Math.max(0, Math.floor(now / 1000) - VHD_EPOCH),
    creatorApplication: 'xo  ',
    creatorVersion: 0,
    creatorHostOs: 0x5769326b,
    originalSize: size,
    currentSize: size,
    geometry: geometryForSize(size),
    diskType,
    checksum: 0,
    uuid,
    savedState: 0,
  }
}

export function encodeFooter(footer: VhdFooter): Buffer {
  const buffer = Buffer.alloc(FOOTER_SIZE)
  buffer.write(FOOTER_COOKIE, 0, 'latin1')
  buffer.writeUInt32BE(footer.features, 8)
  buffer.writeUInt32BE(FILE_FORMAT_VERSION, 12)
  buffer.writeBigUInt64BE(footer.dataOffset === NO_DATA_OFFSET ? ALL_ONES_64 : BigInt(footer.dataOffset), 16)
  buffer.writeUInt32BE(footer.timestamp >>> 0, 24)
  buffer.write(footer.creatorApplication.padEnd(4, '\0').slice(0, 4), 28, 'latin1')
  buffer.writeUInt32BE(footer.creatorVersion >>> 0, 32)
  buffer.writeUInt32BE(footer.creatorHostOs >>> 0, 36)
  buffer.writeBigUInt64BE(BigInt(footer.originalSize), 40)
  buffer.writeBigUInt64BE(BigInt(footer.currentSize), 48)
  buffer.writeUInt16BE(footer.geometry.cylinders, 56)
  buffer.writeUInt8(footer.geometry.heads, 58)
  buffer.writeUInt8(footer.geometry.sectorsPerTrack, 59)
  buffer.writeUInt32BE(footer.diskType, 60)
  uuidToBytes(footer.uuid).copy(buffer, 68)
  buffer.writeUInt8(footer.savedState, 84)
  buffer.writeUInt32BE(vhdChecksum(buffer, CHECKSUM_OFFSET), CHECKSUM_OFFSET)
  return buffer
}

function safeNumber(value: bigint, field: string, offset: number): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    if (value === ALL_ONES_64) return NO_DATA_OFFSET
    throw invalidDiskStream(`VHD ${field} out of range`, offset, { field })
  }
  return Number(value)
}

/**
 * Decodes and validates a footer. `offset` is where it sits in the input, so
 * errors point at the faulty field. Fixed disks decode (dataOffset all-ones);
 * callers decide which disk types they accept.
 */
export function decodeFooter(buffer: Buffer, offset = 0): VhdFooter {
  if (buffer.length < FOOTER_SIZE) throw invalidDiskStream('VHD footer truncated', offset + buffer.length)
  const cookie = buffer.toString('latin1', 0, 8)
  if (cookie !== FOOTER_COOKIE) throw invalidDiskStream(`bad VHD footer cookie ${JSON.stringify(cookie)}`, offset, { field: 'cookie' })
  const checksum = buffer.readUInt32BE(CHECKSUM_OFFSET)
  const expected = vhdChecksum(buffer.subarray(0, FOOTER_SIZE), CHECKSUM_OFFSET)
  if (checksum !== expected) {
    throw invalidDiskStream(`bad VHD footer checksum ${checksum.toString(16)} (computed ${expected.toString(16)})`, offset + CHECKSUM_OFFSET, {
      field: 'checksum',
    })
  }
  const version = buffer.readUInt32BE(12)
  if (version !== FILE_FORMAT_VERSION) throw invalidDiskStream(`unsupported VHD version ${version.toString(16)}`, offset + 12, { field: 'version' })
  const footer: VhdFooter = {
    features: buffer.readUInt32BE(8),
    dataOffset: safeNumber(buffer.readBigUInt64BE(16), 'data offset', offset + 16),
    timestamp: buffer.readUInt32BE(24),
    creatorApplication: buffer.toString('latin1', 28, 32),
    creatorVersion: buffer.readUInt32BE(32),
    creatorHostOs: buffer.readUInt32BE(36),
    originalSize: safeNumber(buffer.readBigUInt64BE(40), 'original size', offset + 40),
    currentSize: safeNumber(buffer.readBigUInt64BE(48), 'current size', offset + 48),
    geometry: { cylinders: buffer.readUInt16BE(56), heads: buffer.readUInt8(58), sectorsPerTrack: buffer.readUInt8(59) },
    diskType: buffer.readUInt32BE(60),
    checksum,
    uuid: uuidFromBytes(buffer.subarray(68, 84)),
    savedState: buffer.readUInt8(84),
  }
  if (footer.diskType !== DiskType.fixed && footer.diskType !== DiskType.dynamic && footer.diskType !== DiskType.differencing) {
    throw invalidDiskStream(`unsupported VHD disk type ${footer.diskType}`, offset + 60, { field: 'diskType' })
  }
  return footer
}

/** For a dynamic or differencing disk, the footer must point at the header right after it. */
export function assertDynamicFooter(footer: VhdFooter, offset = 0): void {
  if (footer.diskType === DiskType.fixed) throw invalidDiskStream('fixed VHDs are not accepted, only dynamic or differencing', offset + 60, { field: 'diskType' })
  if (footer.dataOffset !== HEADER_OFFSET) {
    throw invalidDiskStream(`VHD data offset ${footer.dataOffset} is not ${HEADER_OFFSET}`, offset + 16, { field: 'dataOffset' })
  }
}
