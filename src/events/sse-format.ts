import type { XoRecord } from '../driver/types.js'
import { pick, type FieldPath } from '../api/projection.js'
import type { Formatter } from './feeds.js'

/** One Server-Sent Event: `id:` (when numbered), `event:` and one `data:` line. */
export function sseFrame(event: string, data: string | Buffer, id?: number): Buffer {
  const head = `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: `
  return typeof data === 'string' ? Buffer.from(`${head}${data}\n\n`) : Buffer.concat([Buffer.from(head), data, FRAME_END])
}

const FRAME_END = Buffer.from('\n\n')

/**
 * The frames of one subscription audience: the record (or its picked fields)
 * with `$subscription` first, as the reference sends it. Without fields the
 * record's cached bytes are spliced in rather than serialized again. With
 * fields, an update that changes none of them is not sent.
 */
export function subscriptionFormat(collection: string, fields: readonly FieldPath[] | undefined, bytesOf: (record: XoRecord) => Buffer): Formatter {
  const open = `{"$subscription":${JSON.stringify(collection)}`
  const openBytes = Buffer.from(open)
  const comma = Buffer.from(',')
  return (event) => {
    const record = event.after ?? event.before
    if (record === undefined) return undefined
    if (fields === undefined) {
      const bytes = bytesOf(record)
      const data = bytes.length <= 2 ? Buffer.from(open + '}') : Buffer.concat([openBytes, comma, bytes.subarray(1)])
      return sseFrame(event.kind, data, event.seq)
    }
    const text = JSON.stringify(pick(record, fields))
    if (event.kind === 'update' && event.before !== undefined && JSON.stringify(pick(event.before, fields)) === text) return undefined
    return sseFrame(event.kind, text === '{}' ? open + '}' : `${open},${text.slice(1)}`, event.seq)
  }
}
