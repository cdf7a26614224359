import { readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'

/**
 * How much nicer than the process a worker thread runs: the per-byte work (hashes, encoders)
 * gives the core to the API's main thread whenever both want it, yet has it
 * all while the API is idle. At the same priority, a full backup job on two
 * cores held single reads for 34.5 ms at p99 against 3.6 ms idle
 * (bench/RESULTS.md, 2026-11-27, issue 30).
 */
export const WORKER_NICENESS = 5

/** This thread's id, from Linux's `/proc/thread-self` link (`<pid>/task/<tid>`); undefined elsewhere. */
function threadId(): number | undefined {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1))
    return Number.isSafeInteger(tid) ? tid : undefined
  } catch {
    return undefined
  }
}

/**
 * Lowers the calling thread's priority by `steps` (a nice value `steps`
 * higher, at most 19: lowering needs no privilege, whatever the process's
 * own nice value). On Linux a nice value is per thread, and setpriority(2)
 * given a thread's id changes that thread alone; where there is no thread id
 * to give, nothing changes.
 */
export function lowerThisThread(steps: number): void {
  const tid = threadId()
  if (tid !== undefined) setPriority(tid, Math.min(19, getPriority(tid) + steps))
}
