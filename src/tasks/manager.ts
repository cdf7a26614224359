import type { Statement } from 'better-sqlite3'
import { unsynced, type Db } from '../store/database.js'
import type { EventBus } from '../events/bus.js'
import { aborted, incorrectState, noSuchObject } from '../errors.js'
import { serializeError, taskId, type TaskProperties, type TaskRecord } from './record.js'

export interface TaskContext {
  readonly signal: AbortSignal
  progress(percent: number): void
  /** Bytes moved so far, and of how many when known (which also sets the percentage). */
  bytes(done: number, total?: number): void
}

/** What progress reports change in a task's properties. */
type ProgressChange = Pick<TaskProperties, 'progress' | 'bytes'>

interface Live {
  readonly controller: AbortController
  readonly waiters: Set<(task: TaskRecord) => void>
  /** progress reported since the last write */
  latest: ProgressChange | undefined
  lastWrite: number
  flushTimer: NodeJS.Timeout | undefined
}

/**
 * Each write is a synchronous SQLite commit on the event loop: a transfer
 * reporting every chunk would spend its time there. Progress is written (and
 * published) at most this often, the latest report winning.
 */
export const PROGRESS_WRITE_INTERVAL = 1000

const percentOf = (value: number): number => Math.max(0, Math.min(100, Math.round(value)))

export interface TaskManagerOptions {
  readonly clock: () => number
  /** this installation's id: its rows are the ones it interrupts and prunes (src/installation.ts) */
  readonly installationId: string
  /** finished tasks kept, newest first */
  readonly keep: number
  /** called when a task fails on something that is not a KeelError */
  readonly onUnexpectedError?: (error: unknown, task: TaskRecord) => void
}

/**
 * Tasks: persisted records of long operations. Each state a task reaches is
 * committed before anyone can observe it, so a response that names a final
 * state is durable, and a crash leaves at worst `pending` rows, which become
 * `interrupted` at the next start. Each row names the installation running
 * it; a start interrupts and prunes only its own, so Keels sharing the
 * database leave each other's work alone.
 */
export class TaskManager {
  readonly #db: Db
  readonly #bus: EventBus
  readonly #options: TaskManagerOptions
  readonly #tasks = new Map<string, TaskRecord>()
  /** ids of tasks another installation runs or ran */
  readonly #foreign = new Set<string>()
  readonly #live = new Map<string, Live>()
  readonly #upsert: Statement<[string, string, string, string]>
  readonly #delete: Statement<[string]>
  #closed = false

  constructor(db: Db, bus: EventBus, options: TaskManagerOptions) {
    this.#db = db
    this.#bus = bus
    this.#options = options
    this.#upsert = db.prepare(
      'INSERT INTO tasks (id, status, data, installation_id) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data',
    )
    this.#delete = db.prepare('DELETE FROM tasks WHERE id = ?')
    this.#load()
  }

  list(): Iterable<TaskRecord> {
    return this.#tasks.values()
  }

  get(id: string): TaskRecord | undefined {
    return this.#tasks.get(id)
  }

  /** Creates a pending task and runs `work` in it; `done` settles once the final state is committed. */
  run<T>(properties: TaskProperties, work: (context: TaskContext) => Promise<T>): { task: TaskRecord; done: Promise<T> } {
    const now = this.#options.clock()
    const task: TaskRecord = { id: taskId(now), type: 'task', properties, start: now, updatedAt: now, status: 'pending' }
    const live: Live = { controller: new AbortController(), waiters: new Set(), latest: undefined, lastWrite: now, flushTimer: undefined }
    this.#live.set(task.id, live)
    this.#save(task, undefined)
    const context: TaskContext = {
      signal: live.controller.signal,
      progress: (percent) => this.#report(task.id, live, { progress: percentOf(percent) }),
      bytes: (done, total) =>
        this.#report(task.id, live, {
          ...(total === undefined || total <= 0 ? {} : { progress: percentOf((done / total) * 100) }),
          bytes: total === undefined ? { done } : { done, total },
        }),
    }
    const done = (async () => {
      // The work starts on the next tick so that the caller has answered with the task id first.
      await Promise.resolve()
      if (live.controller.signal.aborted) throw aborted()
      return work(context)
    })().then(
      (result) => {
        this.#finish(task.id, 'success', result)
        return result
      },
      (error: unknown) => {
        const result = serializeError(error)
        const finished = this.#finish(task.id, 'failure', result)
        if (finished !== undefined && result['code'] === 'INTERNAL_ERROR') this.#options.onUnexpectedError?.(error, finished)
        throw error
      },
    )
    // Async callers watch the task, not this promise.
    done.catch(() => {})
    return { task, done }
  }

  /** The task once it has left `pending`, or as it is after `timeout` ms. */
  wait(id: string, timeout?: number, signal?: AbortSignal): Promise<TaskRecord> {
    const task = this.#tasks.get(id)
    if (task === undefined) return Promise.reject(noSuchObject(id, 'task'))
    const live = this.#live.get(id)
    if (task.status !== 'pending' || live === undefined) return Promise.resolve(task)
    return new Promise((resolve) => {
      const settle = (final: TaskRecord): void => {
        live.waiters.delete(settle)
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve(final)
      }
      const onAbort = (): void => settle(this.#tasks.get(id) ?? task)
      const timer = timeout === undefined ? undefined : setTimeout(onAbort, timeout)
      signal?.addEventListener('abort', onAbort, { once: true })
      live.waiters.add(settle)
    })
  }

  /** Asks a running task to stop; the work ends as a failure with an abort error. */
  abort(id: string): void {
    const task = this.#tasks.get(id)
    if (task === undefined) throw noSuchObject(id, 'task')
    const live = this.#live.get(id)
    // Its work runs elsewhere, out of this installation's reach.
    if (task.status === 'pending' && this.#foreign.has(id)) {
      throw incorrectState({ actual: 'another installation', expected: 'this installation', object: id, property: 'installation' })
    }
    if (task.status !== 'pending' || live === undefined) {
      throw incorrectState({ actual: task.status, expected: 'pending', object: id, property: 'status' })
    }
    if (task.abortionRequestedAt === undefined) this.#save({ ...task, abortionRequestedAt: this.#options.clock() }, task)
    live.controller.abort(aborted())
  }

  delete(id: string): void {
    const task = this.#tasks.get(id)
    if (task === undefined) throw noSuchObject(id, 'task')
    if (task.status === 'pending') throw incorrectState({ actual: 'pending', expected: 'finished', object: id, property: 'status' })
    this.#remove(task)
  }

  /**
   * Stops the running work without recording an outcome: those tasks stay
   * `pending` in the store and become `interrupted` at the next start, which
   * is the truth about work cut short by a stop.
   */
  close(): void {
    this.#closed = true
    for (const [id, live] of this.#live) {
      clearTimeout(live.flushTimer)
      live.controller.abort(aborted('the service is stopping'))
      const task = this.#tasks.get(id)
      // Waiting requests get the record as it stands, so the server can close.
      if (task !== undefined) for (const waiter of live.waiters) waiter(task)
    }
    this.#live.clear()
  }

  #report(id: string, live: Live, change: ProgressChange): void {
    if (this.#tasks.get(id)?.status !== 'pending') return
    live.latest = { ...live.latest, ...change }
    const wait = live.lastWrite + PROGRESS_WRITE_INTERVAL - this.#options.clock()
    if (wait <= 0) {
      this.#flushProgress(id, live)
      return
    }
    // Without a later report, the latest one is still written in time.
    live.flushTimer ??= setTimeout(() => this.#flushProgress(id, live), wait).unref()
  }

  #flushProgress(id: string, live: Live): void {
    clearTimeout(live.flushTimer)
    live.flushTimer = undefined
    const change = live.latest
    live.latest = undefined
    const current = this.#tasks.get(id)
    if (change === undefined || current === undefined || current.status !== 'pending') return
    const properties = { ...current.properties, ...change }
    if (properties.progress === current.properties.progress && JSON.stringify(properties.bytes) === JSON.stringify(current.properties.bytes)) return
    live.lastWrite = this.#options.clock()
    // No answer reports a progress: its commit is not synced, the task's next state's is and covers it.
    this.#save({ ...current, properties, updatedAt: live.lastWrite }, current, { synced: false })
  }

  #finish(id: string, status: 'success' | 'failure', result: unknown): TaskRecord | undefined {
    const current = this.#tasks.get(id)
    const live = this.#live.get(id)
    this.#live.delete(id)
    clearTimeout(live?.flushTimer)
    if (current === undefined || this.#closed) return undefined
    const now = this.#options.clock()
    // The final record carries the last progress reported, written or not.
    const properties: TaskProperties = { ...current.properties, ...live?.latest }
    const finished: TaskRecord = {
      ...current,
      properties: status === 'success' && properties.progress !== undefined ? { ...properties, progress: 100 } : properties,
      status,
      end: now,
      updatedAt: now,
      ...(result === undefined ? {} : { result }),
    }
    this.#save(finished, current)
    for (const waiter of live?.waiters ?? []) waiter(finished)
    this.#prune()
    return finished
  }

  #save(task: TaskRecord, previous: TaskRecord | undefined, { synced = true } = {}): void {
    if (this.#closed) return
    const frozen = Object.freeze(task)
    const upsert = (): unknown => this.#upsert.run(task.id, task.status, JSON.stringify(task), this.#options.installationId)
    if (synced) upsert()
    else unsynced(this.#db, upsert)
    this.#tasks.set(task.id, frozen)
    this.#bus.publish(previous === undefined ? { kind: 'add', object: frozen } : { kind: 'update', object: frozen, previous })
  }

  #remove(task: TaskRecord): void {
    this.#delete.run(task.id)
    this.#tasks.delete(task.id)
    this.#foreign.delete(task.id)
    this.#bus.publish({ kind: 'remove', object: task })
  }

  /** Keeps the newest `keep` finished tasks of this installation; pending ones are never pruned, nor another installation's. */
  #prune(): void {
    const prunable = (task: TaskRecord): boolean => task.status !== 'pending' && !this.#foreign.has(task.id)
    let finished = 0
    for (const task of this.#tasks.values()) if (prunable(task)) finished++
    if (finished <= this.#options.keep) return
    const excess = finished - this.#options.keep
    const victims: TaskRecord[] = []
    // Map order is id order at load and creation order afterwards: both oldest first.
    for (const task of this.#tasks.values()) {
      if (victims.length === excess) break
      if (prunable(task)) victims.push(task)
    }
    this.#db.transaction(() => {
      for (const task of victims) this.#remove(task)
    })()
  }

  #load(): void {
    const now = this.#options.clock()
    const { installationId } = this.#options
    this.#db.transaction(() => {
      // Rows from before installations were recorded come from the one Keel that used this database then: this data directory's.
      this.#db.prepare('UPDATE tasks SET installation_id = ? WHERE installation_id IS NULL').run(installationId)
      const rows = this.#db.prepare('SELECT id, status, data, installation_id FROM tasks ORDER BY id').all() as Array<{ id: string; status: string; data: string; installation_id: string }>
      for (const row of rows) {
        let task = JSON.parse(row.data) as TaskRecord
        if (row.installation_id !== installationId) {
          this.#foreign.add(task.id)
        } else if (task.status === 'pending') {
          // Left pending by a crash or a stop: the work is gone, say so.
          task = { ...task, status: 'interrupted', end: now, updatedAt: now }
          this.#upsert.run(task.id, task.status, JSON.stringify(task), installationId)
        }
        this.#tasks.set(task.id, Object.freeze(task))
      }
    })()
    this.#prune()
  }
}
