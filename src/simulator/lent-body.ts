import type { ServerResponse } from 'node:http'
import { giveBack } from '../formats/lending.js'
import { drained } from '../http/reply.js'

/**
 * Writes lent chunks (a worker's output slots, the block pool's blocks) and
 * gives each back once the socket has it, waiting for drain. The wait also
 * ends on 'close': a response destroyed while waiting (task.cancel) never
 * drains, and the transfer would hang with its task left cancelling.
 */
export async function sendLent(response: ServerResponse, bytes: AsyncIterable<Buffer>): Promise<void> {
  for await (const chunk of bytes) {
    if (response.destroyed) throw new Error('the client went away')
    if (!response.write(chunk, () => giveBack(chunk))) await drained(response)
  }
  if (response.destroyed) throw new Error('the client went away')
  await new Promise<void>((resolve) => response.end(resolve))
}
