import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase, unsynced } from '../../src/store/database.js'

t.test('unsynced commits its write at NORMAL and puts the setting back, after a failure too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-db-'))
  const db = openDatabase(dir)
  t.teardown(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })
  db.exec('CREATE TABLE notes (text TEXT)')
  t.equal(db.pragma('synchronous', { simple: true }), 2, 'the store opens at FULL')
  const inside = unsynced(db, () => {
    db.prepare('INSERT INTO notes VALUES (?)').run('progress')
    return db.pragma('synchronous', { simple: true })
  })
  t.equal(inside, 1, 'NORMAL while writing')
  t.equal(db.pragma('synchronous', { simple: true }), 2, 'FULL again after')
  const other = new Database(join(dir, 'keel.sqlite'), { readonly: true })
  t.teardown(() => other.close())
  t.same(other.prepare('SELECT text FROM notes').pluck().all(), ['progress'], 'committed: another connection reads it')
  t.throws(() =>
    unsynced(db, () => {
      throw new Error('write failed')
    }),
  )
  t.equal(db.pragma('synchronous', { simple: true }), 2, 'FULL again after a failed write')
})
