import type { IncomingMessage } from 'node:http'
import { parse as parseContentType } from 'content-type'
import { KeelError } from '../errors.js'
import { requestBody } from './continue.js'

export const bodyTooLarge = (limit: number): KeelError =>
  new KeelError('BODY_TOO_LARGE', `request body is larger than ${limit} bytes`, { limit })

/** Whether the request announces a body at all (length > 0 or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  if (length !== undefined) return length !== '0'
  return req.headers['transfer-encoding'] !== undefined
}

/** `application/json` or any `application/*+json`, parameters aside. */
function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false
  const { type } = parseContentType(value, { parameters: false })
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * Reads and parses a JSON body, refusing early (before buffering) when the
 * declared length is over the limit, and mid-stream when chunked data goes over.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  if (!hasBody(req)) return undefined
  if (!isJsonContentType(req.headers['content-type'])) {
    throw new KeelError('UNSUPPORTED_MEDIA_TYPE', 'request body must be sent with Content-Type: application/json', {
      contentType: req.headers['content-type'] ?? null,
    })
  }
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) throw bodyTooLarge(limit)

  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of requestBody(req)) {
    size += chunk.length
    if (size > limit) throw bodyTooLarge(limit)
    chunks.push(chunk)
  }
  const text = Buffer.concat(chunks, size).toString('utf8')
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new KeelError('INVALID_JSON', `malformed JSON body: ${(error as Error).message}`)
  }
}
