import { invalidDiskStream } from '../stream-error.js'
import { BLOCK_SIZE } from '../blocks.js'
import { vhdChecksum } from './checksum.js'
import { HEADER_COOKIE, HEADER_SIZE, HEADER_VERSION, PlatformCode, SECTOR_SIZE, TABLE_OFFSET } from './constants.js'
import { uuidFromBytes, uuidToBytes } from './uuid.js'

export interface ParentLocator {
  readonly platformCode: number
  /** bytes reserved for the payload in the file (stored in sectors) */
  readonly platformDataSpace: number
  readonly platformDataLength: number
  readonly platformDataOffset: number
}

export interface VhdHeader {
  readonly tableOffset: number
  readonly maxTableEntries: number
  readonly blockSize: number
  readonly checksum: number
  /** all zeros for a dynamic disk */
  readonly parentUuid: string
  readonly parentTimestamp: number
  readonly parentUnicodeName: string
  /** the 8 entries, unused ones with platformCode 0 */
  readonly parentLocators: readonly ParentLocator[]
}

const CHECKSUM_OFFSET = 36
const LOCATOR_TABLE = 576
const LOCATOR_SIZE = 24
const LOCATOR_COUNT = 8
const PARENT_NAME_OFFSET = 64
const PARENT_NAME_SIZE = 512
export const NULL_UUID = '00000000-0000-0000-0000-000000000000'

export const emptyLocator: ParentLocator = { platformCode: PlatformCode.none, platformDataSpace: 0, platformDataLength: 0, platformDataOffset: 0 }

export function encodeHeader(header: VhdHeader): Buffer {
  const buffer = Buffer.alloc(HEADER_SIZE)
  buffer.write(HEADER_COOKIE, 0, 'latin1')
  buffer.writeBigUInt64BE(2n ** 64n - 1n, 8)
  buffer.writeBigUInt64BE(BigInt(header.tableOffset), 16)
  buffer.writeUInt32BE(HEADER_VERSION, 24)
  buffer.writeUInt32BE(header.maxTableEntries, 28)
  buffer.writeUInt32BE(header.blockSize, 32)
  uuidToBytes(header.parentUuid).copy(buffer, 40)
  buffer.writeUInt32BE(header.parentTimestamp >>> 0, 56)
  const name = Buffer.from(header.parentUnicodeName, 'utf16le').swap16()
  name.copy(buffer, PARENT_NAME_OFFSET, 0, Math.min(name.length, PARENT_NAME_SIZE))
  header.parentLocators.slice(0, LOCATOR_COUNT).forEach((locator, i) => {
    const at = LOCATOR_TABLE + i * LOCATOR_SIZE
    buffer.writeUInt32BE(locator.platformCode, at)
    buffer.writeUInt32BE(locator.platformDataSpace / SECTOR_SIZE, at + 4)
    buffer.writeUInt32BE(locator.platformDataLength, at + 8)
    buffer.writeBigUInt64BE(BigInt(locator.platformDataOffset), at + 16)
  })
  buffer.writeUInt32BE(vhdChecksum(buffer, CHECKSUM_OFFSET), CHECKSUM_OFFSET)
  return buffer
}

function decodeName(bytes: Buffer): string {
  const swapped = Buffer.from(bytes).swap16().toString('utf16le')
  const end = swapped.indexOf('\0')
  return end === -1 ? swapped : swapped.slice(0, end)
}

/**
 * Decodes and validates a dynamic-disk header (notes 1.3, 1.12). `offset` is
 * its position in the input, for error messages. Only 2 MiB blocks are
 * accepted: every producer we know writes them and our block model is built on them.
 */
export function decodeHeader(buffer: Buffer, offset: number, currentSize: number): VhdHeader {
  if (buffer.length < HEADER_SIZE) throw invalidDiskStream('VHD header truncated', offset + buffer.length)
  const cookie = buffer.toString('latin1', 0, 8)
  if (cookie !== HEADER_COOKIE) throw invalidDiskStream(`bad VHD header cookie ${JSON.stringify(cookie)}`, offset, { field: 'cookie' })
  const checksum = buffer.readUInt32BE(CHECKSUM_OFFSET)
  const expected = vhdChecksum(buffer.subarray(0, HEADER_SIZE), CHECKSUM_OFFSET)
  if (checksum !== expected) {
    throw invalidDiskStream(`bad VHD header checksum ${checksum.toString(16)} (computed ${expected.toString(16)})`, offset + CHECKSUM_OFFSET, {
      field: 'checksum',
    })
  }
  const version = buffer.readUInt32BE(24)
  if (version !== HEADER_VERSION) throw invalidDiskStream(`unsupported VHD header version ${version.toString(16)}`, offset + 24, { field: 'version' })
  const blockSize = buffer.readUInt32BE(32)
  if (blockSize !== BLOCK_SIZE) throw invalidDiskStream(`unsupported VHD block size ${blockSize}`, offset + 32, { field: 'blockSize' })
  const tableOffset = buffer.readBigUInt64BE(16)
  if (tableOffset < BigInt(TABLE_OFFSET) || tableOffset % BigInt(SECTOR_SIZE) !== 0n || tableOffset > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw invalidDiskStream(`bad VHD table offset ${tableOffset}`, offset + 16, { field: 'tableOffset' })
  }
  const maxTableEntries = buffer.readUInt32BE(28)
  if (maxTableEntries < Math.ceil(currentSize / blockSize)) {
    throw invalidDiskStream(`VHD table of ${maxTableEntries} entries is too small for ${currentSize} bytes`, offset + 28, {
      field: 'maxTableEntries',
    })
  }
  const parentLocators: ParentLocator[] = []
  for (let i = 0; i < LOCATOR_COUNT; i++) {
    const at = LOCATOR_TABLE + i * LOCATOR_SIZE
    const space = buffer.readUInt32BE(at + 4)
    const dataOffset = buffer.readBigUInt64BE(at + 16)
    const platformCode = buffer.readUInt32BE(at)
    if (platformCode !== PlatformCode.none && (dataOffset % BigInt(SECTOR_SIZE) !== 0n || dataOffset > BigInt(Number.MAX_SAFE_INTEGER))) {
      throw invalidDiskStream(`bad VHD parent locator offset ${dataOffset}`, offset + at + 16, { field: `parentLocators[${i}]` })
    }
    parentLocators.push({
      platformCode,
      // Some Windows tools store bytes rather than sectors here; the XAPI library treats values ≥ 512 as bytes.
      platformDataSpace: space >= SECTOR_SIZE ? space : space * SECTOR_SIZE,
      platformDataLength: buffer.readUInt32BE(at + 8),
      platformDataOffset: Number(dataOffset),
    })
  }
  return {
    tableOffset: Number(tableOffset),
    maxTableEntries,
    blockSize,
    checksum,
    parentUuid: uuidFromBytes(buffer.subarray(40, 56)),
    parentTimestamp: buffer.readUInt32BE(56),
    parentUnicodeName: decodeName(buffer.subarray(PARENT_NAME_OFFSET, PARENT_NAME_OFFSET + PARENT_NAME_SIZE)),
    parentLocators,
  }
}
