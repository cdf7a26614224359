/** Fixed numbers of the VHD format (notes 1.1–1.8). All integers are big-endian. */
export const SECTOR_SIZE = 512
export const FOOTER_SIZE = 512
export const HEADER_SIZE = 1024
export const HEADER_OFFSET = 512
/** where our producer places the BAT: right after the header */
export const TABLE_OFFSET = FOOTER_SIZE + HEADER_SIZE
/** one bit per 512-byte sector of a 2 MiB block, rounded to a whole sector */
export const BITMAP_SIZE = 512
export const FILE_FORMAT_VERSION = 0x00010000
export const HEADER_VERSION = 0x00010000
export const UNUSED_BAT_ENTRY = 0xffffffff
export const FOOTER_COOKIE = 'conectix'
export const HEADER_COOKIE = 'cxsparse'
/** seconds between the Unix epoch and 2000-01-01T00:00:00Z, the VHD epoch */
export const VHD_EPOCH = 946684800
/** XO's VHD_MAX_SIZE: above it the reference switches to qcow2, so we refuse VHD */
export const VHD_MAX_SIZE = 2 * 1024 ** 4 - 8 * 1024

export const DiskType = { fixed: 2, dynamic: 3, differencing: 4 } as const
export type DiskType = (typeof DiskType)[keyof typeof DiskType]

export const PlatformCode = {
  none: 0,
  /** relative path, UTF-16LE */
  W2ru: 0x57327275,
  /** absolute path, UTF-16LE */
  W2ku: 0x57326b75,
  /** file:// URL, UTF-8 (blktap, XAPI) */
  MacX: 0x4d616358,
} as const
