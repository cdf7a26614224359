import { PlatformCode, SECTOR_SIZE } from './constants.js'
import type { ParentLocator } from './header.js'

export interface LocatorPayload {
  readonly locator: ParentLocator
  /** zero padded to platformDataSpace */
  readonly payload: Buffer
}

/**
 * XO's single locator (notes 1.9): entry 0 = W2ku with the parent's file name
 * in UTF-16LE; its offset is filled in by whoever places it in the file.
 */
export function w2kuLocator(parentName: string, platformDataOffset: number): LocatorPayload {
  const data = Buffer.from(parentName, 'utf16le')
  const space = Math.max(1, Math.ceil(data.length / SECTOR_SIZE)) * SECTOR_SIZE
  const payload = Buffer.alloc(space)
  data.copy(payload)
  return {
    locator: { platformCode: PlatformCode.W2ku, platformDataSpace: space, platformDataLength: data.length, platformDataOffset },
    payload,
  }
}

/** The parent file name a locator names, if it is one of the path codes. */
export function decodeLocatorPath(locator: ParentLocator, payload: Buffer): string | undefined {
  const data = payload.subarray(0, locator.platformDataLength)
  switch (locator.platformCode) {
    case PlatformCode.W2ku:
    case PlatformCode.W2ru:
      return data.toString('utf16le')
    case PlatformCode.MacX:
      return data.toString('utf8').replace(/^file:\/\//, '')
    default:
      return undefined
  }
}
