import type { XoRecord } from '../driver/types.js'
import { pick, type FieldPath } from '../api/projection.js'
import { httpChunk, type Chunk } from '../http/chunk.js'
import type { Formatter } from './feeds.js'

/** One Server-Sent Event: `id:` (when numbered), `event:` and one `data:` line, its data given in parts. */
export function sseFrame(event: string, data: string | readonly (string | Buffer)[], id?: number): Chunk {
  const head = `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: `
  return typeof data === 'string' ? httpChunk(`${head}${data}\n\n`) : httpChunk(head, ...data, '\n\n')
}

/**
 * The frames of one subscription audience: the record (or its picked fields)
 * with `$subscription` first, as the reference sends it. Without fields the
 * record's cached bytes are spliced in rather than serialized again. With
 * fields, an update that changes none of them is not sent.
 */
export function subscriptionFormat(collection: string, fields: readonly FieldPath[] | undefined, bytesOf: (record: XoRecord) => Buffer): Formatter {
  const open = `{"$subscription":${JSON.stringify(collection)}`
  return (event) => {
    const record = event.after ?? event.before
    if (record === undefined) return undefined
    if (fields === undefined) {
      const bytes = bytesOf(record)
      return sseFrame(event.kind, bytes.length <= 2 ? open + '}' : [open, ',', bytes.subarray(1)], event.seq)
    }
    const text = JSON.stringify(pick(record, fields))
    if (event.kind === 'update' && event.before !== undefined && JSON.stringify(pick(event.before, fields)) === text) return undefined
    return sseFrame(event.kind, text === '{}' ? open + '}' : `${open},${text.slice(1)}`, event.seq)
  }
}
