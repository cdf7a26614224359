import Database from 'better-sqlite3'
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { migrate, type Db } from '../../src/store/database.js'
import { EventBus } from '../../src/events/bus.js'
import { PROGRESS_WRITE_INTERVAL, TaskManager, type TaskContext } from '../../src/tasks/manager.js'
import type { TaskRecord } from '../../src/tasks/record.js'
import { ManualClock } from '../helpers/server.js'

interface Setup {
  readonly db: Db
  readonly tasks: TaskManager
  readonly clock: ManualClock
  /** rows of task `id` written so far */
  writesOf(id: string): number
  /** resolves at the next write of task `id` */
  nextWrite(id: string): Promise<void>
  stored(id: string): TaskRecord
}

function setup(t: { teardown(fn: () => unknown): void }): Setup {
  const db = new Database(':memory:')
  migrate(db)
  const clock = new ManualClock()
  const bus = new EventBus()
  const written: string[] = []
  const waiters = new Set<(id: string) => void>()
  // Every write is published once, right after the row is committed.
  bus.subscribe((change) => {
    written.push(change.object.id)
    for (const waiter of [...waiters]) waiter(change.object.id)
  })
  const tasks = new TaskManager(db, bus, { clock: clock.read, keep: 10, installationId: randomUUID() })
  t.teardown(() => {
    tasks.close()
    db.close()
  })
  return {
    db,
    tasks,
    clock,
    writesOf: (id) => written.filter((writtenId) => writtenId === id).length,
    nextWrite: (id) =>
      new Promise((resolve) => {
        // The manager's timers do not hold the process open: the waiting test does.
        const open = setInterval(() => {}, 60_000)
        const waiter = (writtenId: string): void => {
          if (writtenId !== id) return
          waiters.delete(waiter)
          clearInterval(open)
          resolve()
        }
        waiters.add(waiter)
      }),
    stored: (id) => JSON.parse((db.prepare('SELECT data FROM tasks WHERE id = ?').pluck().get(id) as string | undefined) ?? 'null') as TaskRecord,
  }
}

/** Runs a task whose work the test drives through its context until it calls `finish`. */
function started(s: Setup): { task: TaskRecord; context: Promise<TaskContext>; finish: () => void; done: Promise<unknown> } {
  let finish = (): void => {}
  let provide: (context: TaskContext) => void = () => {}
  const context = new Promise<TaskContext>((resolve) => (provide = resolve))
  const { task, done } = s.tasks.run({ name: 'transfer' }, (ctx) => {
    provide(ctx)
    return new Promise<void>((resolve) => (finish = resolve))
  })
  return { task, context, finish: () => finish(), done }
}

/**
 * Resolves once a progress timer started now has written. A task's timer waits at most
 * PROGRESS_WRITE_INTERVAL, which is what this one waits (the clock stands still): every timer
 * started before it has fired by then.
 */
async function laterTimerFired(s: Setup): Promise<void> {
  const sentinel = started(s)
  const ctx = await sentinel.context
  const written = s.nextWrite(sentinel.task.id)
  ctx.progress(50)
  await written
  sentinel.finish()
  await sentinel.done
}

t.test('1000 progress reports within a second are at most 2 writes, and the latest is written by a timer', async (t) => {
  const s = setup(t)
  const run = started(s)
  const ctx = await run.context
  const before = s.writesOf(run.task.id)
  for (let i = 1; i <= 1000; i++) {
    s.clock.advance(0.9)
    ctx.progress(i / 10)
  }
  t.ok(s.writesOf(run.task.id) - before <= 2, `${s.writesOf(run.task.id) - before} writes`)
  if (s.stored(run.task.id).properties.progress !== 100) await s.nextWrite(run.task.id)
  const afterLatest = s.writesOf(run.task.id)
  await laterTimerFired(s)
  t.ok(s.writesOf(run.task.id) - before <= 2, 'the timer adds no write past the bound')
  t.equal(s.writesOf(run.task.id), afterLatest, 'nor any after the latest value')
  t.equal(s.stored(run.task.id).properties.progress, 100, 'the latest value is persisted')
  t.equal(s.tasks.get(run.task.id)?.properties.progress, 100, 'and is the record in memory')
  run.finish()
  await run.done
})

t.test('byte progress sets the percentage and the byte counts; finishing writes them and cancels the timer', async (t) => {
  const s = setup(t)
  const run = started(s)
  const ctx = await run.context
  s.clock.advance(PROGRESS_WRITE_INTERVAL)
  ctx.bytes(256, 1024)
  t.same(s.stored(run.task.id).properties.bytes, { done: 256, total: 1024 }, 'a report after a quiet second is written at once')
  t.equal(s.stored(run.task.id).properties.progress, 25)
  s.clock.advance(10)
  ctx.bytes(512)
  t.same(s.stored(run.task.id).properties.bytes, { done: 256, total: 1024 }, 'a report right after waits')
  const before = s.writesOf(run.task.id)
  run.finish()
  await run.done
  const finished = s.stored(run.task.id)
  t.equal(finished.status, 'success')
  t.same(finished.properties.bytes, { done: 512 }, 'the final state carries the last report')
  t.equal(finished.properties.progress, 100)
  await laterTimerFired(s)
  t.equal(s.writesOf(run.task.id) - before, 1, 'only the final state was written: the pending timer was cancelled')
  t.same(s.tasks.get(run.task.id), finished)
})

t.test("a progress write is committed unsynced, a task's states synced", async (t) => {
  const s = setup(t)
  // Every change of the connection's synchronous setting, in order.
  const changes: string[] = []
  const pragma = s.db.pragma.bind(s.db)
  s.db.pragma = ((source: string, options?: Database.PragmaOptions) => {
    const set = /^synchronous = (\w+)$/.exec(source)?.[1]
    if (set !== undefined) changes.push(set)
    return pragma(source, options)
  }) as typeof s.db.pragma
  const run = started(s)
  const ctx = await run.context
  t.same(changes, [], 'the pending state is written synced')
  const written = s.nextWrite(run.task.id)
  s.clock.advance(PROGRESS_WRITE_INTERVAL)
  ctx.progress(40)
  await written
  t.equal(s.stored(run.task.id).properties.progress, 40, 'the progress is committed')
  t.same(changes, ['NORMAL', '2'], 'with the connection at NORMAL, and back to FULL after it')
  run.finish()
  await run.done
  t.equal(s.stored(run.task.id).status, 'success')
  t.same(changes, ['NORMAL', '2'], 'the final state is written synced')
})
