/**
 * Case-insensitive search without lowering (and so copying) the text: a
 * listing tests a term against every record, and `value.toLowerCase()` per
 * record was most of a simple filter's time (bench/RESULTS.md). ASCII text
 * is compared in place; the first character outside ASCII the search reads
 * makes it answer NOT_ASCII, and the caller then lowers the text as before,
 * so the answers are those of `toLowerCase()` exactly.
 */

export const NOT_ASCII = -2

export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false
  return true
}

/**
 * Where `needle` (ASCII, lower case) starts in `text` at or after `from`,
 * ASCII letters compared without case; -1 when nowhere, NOT_ASCII when the
 * search read a character outside ASCII. Every start position is read, and
 * a window is read up to its first mismatch on an ASCII character, which no
 * lowering could make match: so a NOT_ASCII-free answer is the same as on
 * the lowered text.
 */
export function asciiIndexOf(text: string, needle: string, from: number): number {
  const length = needle.length
  const last = text.length - length
  outer: for (let i = from; i <= last; i++) {
    for (let j = 0; j < length; j++) {
      let code = text.charCodeAt(i + j)
      if (code > 0x7f) return NOT_ASCII
      if (code >= 0x41 && code <= 0x5a) code += 0x20
      if (code !== needle.charCodeAt(j)) continue outer
    }
    return i
  }
  return -1
}
