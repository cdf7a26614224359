import { KeelError } from '../errors.js'

/**
 * Every malformed or truncated disk/VM stream fails with this code, naming the
 * byte offset (in the stream as received, after decompression) where the
 * decoder found the problem, so a client can tell a cut upload from bad content.
 */
export const INVALID_DISK_STREAM = 'INVALID_DISK_STREAM'

export function invalidDiskStream(message: string, offset: number, data: Record<string, unknown> = {}): KeelError {
  return new KeelError(INVALID_DISK_STREAM, `${message} at byte ${offset}`, { ...data, offset })
}

/** A disk too large for the format asked for (VHD stops at XO's VHD_MAX_SIZE). */
export const DISK_TOO_LARGE = 'DISK_TOO_LARGE'

export function diskTooLarge(size: number, limit: number, format: string): KeelError {
  return new KeelError(DISK_TOO_LARGE, `a disk of ${size} bytes is larger than ${format} allows (${limit} bytes)`, { size, limit, format })
}
