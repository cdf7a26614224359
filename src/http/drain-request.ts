import type { IncomingMessage, ServerResponse } from 'node:http'
import { isAwaitingContinue } from './continue.js'

const LINGER_MS = 5000

/**
 * After refusing an upload mid-stream: reads and discards what the client is
 * still sending (for at most a few seconds) so that the error answer reaches
 * it, instead of the reset a socket closed on unread data causes. The
 * connection is closed afterwards, never reused. A client still waiting for
 * `100 Continue` has sent nothing, so there is nothing to wait for.
 */
export async function discardRestOfRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.complete || req.destroyed) return
  res.setHeader('Connection', 'close')
  if (isAwaitingContinue(req)) return
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, LINGER_MS)
    function done(): void {
      clearTimeout(timer)
      req.off('end', done).off('close', done).off('error', done)
      resolve()
    }
    req.on('end', done).on('close', done).on('error', done)
    req.resume()
  })
}
