import type { CallOutcome } from './calls.js'
import type { XapiDatabase } from './database.js'

const LOOPBACK = /^127\.0\.0\.(\d{1,3})$/

/**
 * Where each host of the pool answers when the simulator listens on a
 * loopback address 127.0.0.x: the master there, the other hosts on the next
 * addresses (x+1, x+2, ...), in the lab's order. Empty for any other address:
 * the master alone answers.
 */
export function memberAddresses(host: string, db: XapiDatabase): Map<string, string> {
  const match = LOOPBACK.exec(host)
  const out = new Map<string, string>()
  if (match === null) return out
  const first = Number(match[1])
  let master: string | undefined
  for (const pool of db.ofClass('pool')) master = String(pool.record['master'])
  const others = [...db.ofClass('host')].map((h) => h.ref).filter((ref) => ref !== master)
  if (master === undefined || first + others.length > 254) return out
  out.set(master, host)
  others.forEach((ref, i) => out.set(ref, `127.0.0.${first + i + 1}`))
  return out
}

/** A pool member's answer to every call: HOST_IS_SLAVE with the master's address, for the client to go there (shared notes on xapi §1.5). */
export const memberOf = (masterAddress: string): { call(method: string, params: readonly unknown[]): Promise<CallOutcome> } => ({
  call: async () => ({ failure: ['HOST_IS_SLAVE', masterAddress] }),
})
