import type { IncomingMessage } from 'node:http'
import { requestBody } from './continue.js'
import { collectedAsRead } from './young-collection.js'

/**
 * The body of a disk or VM upload, its dead chunks collected as it is read
 * (young-collection.ts). Measured on a 4 GiB raw import alone: peak RSS
 * 105–107 MiB instead of 122, Keel's RSS after it 97–106 MiB instead of
 * 98–129, and the import 1.5 times faster (its chunks are reused while
 * still in cache).
 */
export function uploadBody(req: IncomingMessage): AsyncGenerator<Buffer> {
  return collectedAsRead(requestBody(req))
}
