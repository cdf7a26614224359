declare const framed: unique symbol

/**
 * Bytes framed once as one HTTP/1.1 chunk (`<size in hex>\r\n<payload>\r\n`),
 * so that every connection of a stream's audience is handed the same Buffer
 * and writes it to its socket as it is: no framing, copy or allocation per
 * connection.
 */
export type Chunk = Buffer & { readonly [framed]: true }

/** One chunk holding the parts one after the other, in one allocation. */
export function httpChunk(...parts: ReadonlyArray<string | Buffer>): Chunk {
  let size = 0
  for (const part of parts) size += typeof part === 'string' ? Buffer.byteLength(part) : part.length
  const head = `${size.toString(16)}\r\n`
  const chunk = Buffer.allocUnsafe(head.length + size + 2)
  let offset = chunk.write(head, 0, 'latin1')
  for (const part of parts) offset += typeof part === 'string' ? chunk.write(part, offset) : part.copy(chunk, offset)
  chunk.write('\r\n', offset, 'latin1')
  return chunk as Chunk
}

/** The payload alone, for a response that is not chunked (an HTTP/1.0 client's). */
export function chunkPayload(chunk: Chunk): Buffer {
  return chunk.subarray(chunk.indexOf(10) + 1, chunk.length - 2)
}
