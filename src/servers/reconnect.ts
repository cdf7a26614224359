/** Runs `run` after `delay` ms; the returned function cancels it. Tests pass one they step by hand. */
export interface Scheduler {
  schedule(delay: number, run: () => void): () => void
}

/** Node's timers, unref'd: a pending retry never keeps the process alive. */
export const timerScheduler: Scheduler = {
  schedule(delay, run) {
    const timer = setTimeout(run, delay)
    timer.unref()
    return () => clearTimeout(timer)
  },
}

export interface BackoffPolicy {
  /** ms before the first retry */
  readonly initial: number
  /** ms between retries, at most */
  readonly max: number
}

/**
 * The wait before retry number `attempt` (0 for the first): doubling from
 * `initial` up to `max`, then drawn in its upper half so that the pools of a
 * restarted service, or the entries of a pool that went away, do not all come
 * back at the same instant.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number): number {
  const ceiling = Math.min(policy.max, policy.initial * 2 ** Math.min(attempt, 30))
  return Math.round(ceiling / 2 + (ceiling / 2) * random())
}
