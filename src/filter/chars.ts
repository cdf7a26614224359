/**
 * Character classes of the complex-matcher syntax. Positions and characters
 * are UTF-16 code units, as in XO, so a lone surrogate is never raw.
 */

const ASCII_RAW = /^[0-9A-Za-z_.$-]$/

/** Digits, `_ - . $`, and any character that has distinct upper and lower cases. */
export function isRawChar(c: string): boolean {
  if (c < '\x80') return ASCII_RAW.test(c)
  // XO's definition: a character is a letter when case mapping changes it.
  return c !== c.toUpperCase() || c !== c.toLowerCase()
}

export function isRawString(value: string): boolean {
  return value !== '' && everyChar(value, isRawChar)
}

export function isGlobChar(c: string): boolean {
  return c === '*' || isRawChar(c)
}

/** What the parser reads as a glob: raw characters and at least one `*`. */
export function isGlobPattern(value: string): boolean {
  return value.includes('*') && everyChar(value, isGlobChar)
}

function everyChar(value: string, accept: (c: string) => boolean): boolean {
  for (let i = 0; i < value.length; ++i) {
    if (!accept(value.charAt(i))) return false
  }
  return true
}

/** Whether a raw token denotes a number (`+token` in XO): such tokens become NumberOrString. */
export function isNumericToken(token: string): boolean {
  return !Number.isNaN(Number(token))
}
