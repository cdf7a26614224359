const SIZE_UNITS: Readonly<Record<string, number>> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 }
const AGE_UNITS: Readonly<Record<string, number>> = { s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 }

export const GiB = 2 ** 30
export const MiB = 2 ** 20

/** Bytes from a number of bytes or text such as "40 GiB" (the spec schema has checked the form). */
export function parseSize(size: number | string): number {
  if (typeof size === 'number') return size
  const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$/.exec(size)
  const unit = match?.[2] === undefined ? undefined : SIZE_UNITS[match[2]]
  if (match?.[1] === undefined || unit === undefined) throw new Error(`invalid size "${size}"`)
  return Math.round(Number(match[1]) * unit)
}

/** Milliseconds from text such as "90 min" or "3 d". */
export function parseAge(age: string): number {
  const match = /^(\d+)\s*([a-z]+)$/.exec(age)
  const unit = match?.[2] === undefined ? undefined : AGE_UNITS[match[2]]
  if (match?.[1] === undefined || unit === undefined) throw new Error(`invalid age "${age}"`)
  return Number(match[1]) * unit
}
