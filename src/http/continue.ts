import type { IncomingMessage, ServerResponse } from 'node:http'

/** Requests that asked `Expect: 100-continue` and have not been told to go on yet. */
const awaiting = new WeakMap<IncomingMessage, ServerResponse>()

/**
 * Holds back the interim `100 Continue`: node would send it before routing,
 * inviting a client to upload a body the answer may then refuse.
 */
export function deferContinue(req: IncomingMessage, res: ServerResponse): void {
  awaiting.set(req, res)
}

/** Whether the client is still waiting for `100 Continue`, so has sent no byte of its body. */
export function isAwaitingContinue(req: IncomingMessage): boolean {
  return awaiting.has(req)
}

/**
 * The request body, sending `100 Continue` when iteration starts (not when
 * this is called) if the client waits for it, so checks a reader makes
 * before its first read still answer without inviting the upload. The
 * iterator does not destroy the request when a reader stops early, so a
 * refusal can still be answered.
 */
export function requestBody(req: IncomingMessage): AsyncIterable<Buffer> {
  return {
    [Symbol.asyncIterator]: () => {
      const res = awaiting.get(req)
      if (res !== undefined) {
        awaiting.delete(req)
        res.writeContinue()
      }
      return req.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>
    },
  }
}
