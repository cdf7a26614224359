// Per-thread CPU and run-queue wait of a process, from Linux's /proc/<pid>/task/*: what the
// process's total CPU hides, which of its threads did the work, and how long its main thread
// (the API's event loop) was ready to run but waited for a core.
import { readdirSync, readFileSync } from 'node:fs'

/**
 * The threads of a process by role: its main thread; the threads nicer than it (Keel's worker
 * threads, workers/thread-priority.ts); the others, at its priority: libuv's threadpool (the
 * asynchronous file I/O) and V8's platform threads (concurrent GC and compilation), which Node 20
 * names alike ("node"), so that only their sum is known.
 */
export type ThreadRole = 'main' | 'workers' | 'others'

export interface ThreadTotals {
  /** CPU seconds in user mode */
  readonly user: number
  /** CPU seconds in the kernel */
  readonly system: number
  /** seconds ready to run and waiting for a core (schedstat's second field) */
  readonly waited: number
}

export type ThreadStats = Record<ThreadRole, ThreadTotals>


const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    // A thread that ended between the listing and the read.
    return undefined
  }
}

interface ThreadSample extends ThreadTotals {
  readonly role: ThreadRole
}

/** Every thread alive now, by id. */
function sample(pid: number): Map<number, ThreadSample> {
  const ticks = 100
  const threads = new Map<number, ThreadSample>()
  let names: string[]
  try {
    names = readdirSync(`/proc/${pid}/task`)
  } catch {
    return threads
  }
  const mainNice = Number(read(`/proc/${pid}/stat`)?.split(') ')[1]?.split(' ')[16])
  for (const name of names) {
    const tid = Number(name)
    const stat = read(`/proc/${pid}/task/${name}/stat`)
    const schedstat = read(`/proc/${pid}/task/${name}/schedstat`)
    if (stat === undefined || schedstat === undefined) continue
    // From the third field on (the state), after the command's name, which may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    const nice = Number(fields[16])
    threads.set(tid, { role: tid === pid ? 'main' : nice > mainNice ? 'workers' : 'others', user: Number(fields[11]) / ticks, system: Number(fields[12]) / ticks, waited: Number(schedstat.split(' ')[1]) / 1e9 })
  }
  return threads
}

/**
 * Follows a process's threads from now until `stop`: what each role used meanwhile. Threads are
 * read every `everyMs`, so that one that starts and ends within the span (a worker thread retires
 * after a second idle) counts up to its last reading.
 */
export function followThreads(pid: number, everyMs = 250): { stop: () => ThreadStats } {
  const first = sample(pid)
  const last = new Map(first)
  const update = (): void => {
    for (const [tid, thread] of sample(pid)) last.set(tid, thread)
  }
  const timer = setInterval(update, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      update()
      const totals: Record<ThreadRole, { user: number; system: number; waited: number }> = {
        main: { user: 0, system: 0, waited: 0 },
        workers: { user: 0, system: 0, waited: 0 },
        others: { user: 0, system: 0, waited: 0 },
      }
      for (const [tid, thread] of last) {
        const before = first.get(tid)
        const total = totals[thread.role]
        total.user += thread.user - (before?.user ?? 0)
        total.system += thread.system - (before?.system ?? 0)
        total.waited += thread.waited - (before?.waited ?? 0)
      }
      return totals
    },
  }
}
