import Database from 'better-sqlite3'
import t from 'tap'
import { BackupStore } from '../../src/backups/store.js'
import { EventBus } from '../../src/events/bus.js'
import { migrate } from '../../src/store/database.js'

t.test("a record put unsynced is committed at NORMAL, one put by default at FULL; the setting is back after each", async (t) => {
  const db = new Database(':memory:')
  migrate(db)
  t.teardown(() => db.close())
  const store = new BackupStore(db, new EventBus(), 'installation')
  // Every change of the connection's synchronous setting, in order.
  const changes: string[] = []
  const pragma = db.pragma.bind(db)
  db.pragma = ((source: string, options?: Database.PragmaOptions) => {
    const set = /^synchronous = (\w+)$/.exec(source)?.[1]
    if (set !== undefined) changes.push(set)
    return pragma(source, options)
  }) as typeof db.pragma
  const log = { id: '1', type: 'backup-log', message: 'backup', jobId: 'job', jobName: 'bench', start: 1, status: 'pending', data: {} } as const
  store.put({ ...log, tasks: [{ id: '1:0', message: 'transfer', start: 2, status: 'pending' }] }, { synced: false })
  t.same(changes, ['NORMAL', '2'], "a step's state: NORMAL for its commit, FULL again after")
  store.put({ ...log, status: 'success', end: 3 })
  t.same(changes, ['NORMAL', '2'], "the run's own state: synced")
  const stored = db.prepare("SELECT data FROM backup_records WHERE type = 'backup-log' AND id = '1'").pluck().get() as string
  t.equal(JSON.parse(stored).status, 'success', 'both committed, the last one stored')
  t.equal(store.get('backup-log', '1')?.status, 'success')
})
