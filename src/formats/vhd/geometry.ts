import { SECTOR_SIZE } from './constants.js'

export interface Geometry {
  readonly cylinders: number
  readonly heads: number
  readonly sectorsPerTrack: number
}

/**
 * The spec's CHS algorithm in integer arithmetic (notes 1.7). Readers we care
 * about trust currentSize, so this only fills the footer's informational field.
 */
export function geometryForSize(size: number): Geometry {
  const totalSectors = Math.min(Math.floor(size / SECTOR_SIZE), 65535 * 16 * 255)
  let sectorsPerTrack: number
  let heads: number
  let cylinderTimesHeads: number
  if (totalSectors >= 65535 * 16 * 63) {
    sectorsPerTrack = 255
    heads = 16
    cylinderTimesHeads = Math.floor(totalSectors / sectorsPerTrack)
  } else {
    sectorsPerTrack = 17
    cylinderTimesHeads = Math.floor(totalSectors / sectorsPerTrack)
    heads = Math.max(4, Math.floor((cylinderTimesHeads + 1023) / 1024))
    if (cylinderTimesHeads >= heads * 1024 || heads > 16) {
      sectorsPerTrack = 31
      heads = 16
      cylinderTimesHeads = Math.floor(totalSectors / sectorsPerTrack)
    }
    if (cylinderTimesHeads >= heads * 1024) {
      sectorsPerTrack = 63
      heads = 16
      cylinderTimesHeads = Math.floor(totalSectors / sectorsPerTrack)
    }
  }
  return { cylinders: Math.floor(cylinderTimesHeads / heads), heads, sectorsPerTrack }
}
