import type { IncomingMessage, ServerResponse } from 'node:http'
import { KeelError } from '../errors.js'

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
}

/** Cuts a request whose JSON body has not fully arrived `ms` after its headers. */
export function boundBody(req: IncomingMessage, res: ServerResponse, ms: number): void {
  if (req.complete) return
  const timer = setTimeout(() => {
    req.destroy(stalled(`request body not received within ${ms} ms`))
    res.destroy()
  }, ms)
  const clear = (): void => clearTimeout(timer)
  req.once('end', clear).once('close', clear)
}
