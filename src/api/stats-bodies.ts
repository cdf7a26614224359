import type { XapiStats } from '../driver/types.js'

/**
 * The JSON of each statistics object, made once. The lab's reader hands the
 * same object to every request until its window moves on a step or the object
 * changes (src/stats/reader.ts), so a series polled by many clients is
 * serialized once per sample; a pool's body is its hosts' bodies side by side
 * (at 10,000 VMs on 50 hosts, one pool's is 2.7 MB: serializing it for every
 * request kept 50 clients from ever being answered).
 */
const bodies = new WeakMap<XapiStats, Buffer>()

export function statsBody(stats: XapiStats): Buffer {
  let body = bodies.get(stats)
  if (body === undefined) {
    body = Buffer.from(JSON.stringify(stats))
    bodies.set(stats, body)
  }
  return body
}

/**
 * The pieces of `{"<host id>": <stats or error>, ...}` in the hosts' order:
 * the bytes of the object serialized whole, since host ids (uuids) are never
 * the integer-like keys JSON.stringify would put first.
 */
export function* objectPieces(entries: Iterable<readonly [key: string, body: Buffer]>): Generator<string | Buffer> {
  let separator = '{'
  for (const [key, body] of entries) {
    yield `${separator}${JSON.stringify(key)}:`
    yield body
    separator = ','
  }
  yield separator === '{' ? '{}' : '}'
}
