import type { IncomingMessage, ServerResponse } from 'node:http'
import { KeelError } from '../errors.js'
import { hasBody } from './body.js'

/** How long a JSON body may take to arrive once its headers have, like node's headersTimeout for the headers. */
export const JSON_BODY_TIMEOUT = 60_000

// The client stalled, not the service: a 408, never a logged 500, though the connection goes with it.
const stalled = (message: string): KeelError => new KeelError('REQUEST_TIMEOUT', message)

/**
 * Cuts a streaming request when no byte moves either way for `ms`. The
 * request is destroyed with an error, so an upload's reader sees a broken
 * stream and abandons its import; the response goes with it.
 */
export function watchIdle(req: IncomingMessage, res: ServerResponse, ms: number): void {
  // The socket's own timer counts reads and writes alike, which is the idleness meant here;
  // once the response is finished node replaces it with the keep-alive timeout.
  req.setTimeout(ms, () => {
    req.destroy(stalled(`no byte moved for ${ms} ms`))
    res.destroy()
  })
  // Once an upload has wholly arrived the client waits on its commit, however long: cutting
  // then would leave it unsure whether the disk was written.
  if (hasBody(req)) req.once('end', () => req.setTimeout(0))
}

/** Reads a JSON body, cutting the request if the reading takes more than `ms`. */
export async function withinBodyTimeout<T>(req: IncomingMessage, res: ServerResponse, ms: number, reading: Promise<T>): Promise<T> {
  const timer = setTimeout(() => {
    req.destroy(stalled(`request body not received within ${ms} ms`))
    res.destroy()
  }, ms)
  try {
    return await reading
  } finally {
    clearTimeout(timer)
  }
}
