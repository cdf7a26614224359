/**
 * Deterministic randomness for the lab. Every value derives from (seed, key),
 * not from a position in one global sequence, so adding an object to a spec
 * leaves the ids and values of all the others unchanged.
 */
export class LabRandom {
  readonly #prefix: string

  constructor(seed: number) {
    this.#prefix = `${seed}\u0000`
  }

  /** A stream of uniform 32-bit unsigned integers for `key`. */
  stream(key: string): () => number {
    const [a, b, c, d] = cyrb128(this.#prefix + key)
    return sfc32(a, b, c, d)
  }

  /** A version-4 UUID (random layout: version nibble 4, variant bits 10). */
  uuid(key: string): string {
    const next = this.stream(key)
    const [a, b, c, d] = [next(), next(), next(), next()]
    return (
      hex(a, 8) +
      '-' +
      hex(b >>> 16, 4) +
      '-' +
      hex(((b & 0x0fff) | 0x4000) >>> 0, 4) +
      '-' +
      hex((((c >>> 16) & 0x3fff) | 0x8000) >>> 0, 4) +
      '-' +
      hex(c & 0xffff, 4) +
      hex(d, 8)
    )
  }

  /** A number in [0, 1). */
  fraction(key: string): number {
    return this.stream(key)() / 2 ** 32
  }

  /** `count` random bytes as lower-case hex pairs joined by `separator`. */
  hexBytes(key: string, count: number, separator: string): string {
    const next = this.stream(key)
    const bytes: string[] = []
    for (let i = 0; i < count; i++) bytes.push(hex(next() & 0xff, 2))
    return bytes.join(separator)
  }

  /** A MAC address with the locally-administered bit set, as XAPI generates for VIFs. */
  mac(key: string): string {
    const next = this.stream(key)
    const bytes = [(next() & 0xfc) | 0x02, next() & 0xff, next() & 0xff, next() & 0xff, next() & 0xff, next() & 0xff]
    return bytes.map((byte) => hex(byte, 2)).join(':')
  }
}

const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, '0')

// cyrb128 and sfc32 (public domain, bryc/code "PRNGs"): a fast 128-bit string hash
// seeding a small-state generator that passes PractRand; non-cryptographic on purpose.
function cyrb128(text: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}

function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    const t = (((a + b) | 0) + d) | 0
    d = (d + 1) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) | 0
    return t >>> 0
  }
}
