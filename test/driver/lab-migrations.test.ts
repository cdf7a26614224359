import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { LAB_COMPONENT, labMigrations } from '../../src/driver/lab/migrations.js'
import type { Db } from '../../src/store/database.js'
import { migrations } from '../../src/store/migrations.js'
import { openLab, removeLater } from '../helpers/lab.js'

/** The lab's tables as core migration 2 made them before the lab owned them. */
const OLD_CORE_MIGRATION_2 = `
  CREATE TABLE lab_objects (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX lab_objects_by_type ON lab_objects(type);
  CREATE TABLE lab_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
`

const POOL = { id: 'p1', type: 'pool', name_label: 'kept' }
const HOST = { id: 'h1', type: 'host', name_label: 'kept too', $pool: 'p1' }

/** A data directory as Keel left it when core migrations 1 to 3 made every table, lab included. */
function oldDataDir(): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-old-'))
  const db = new Database(join(dataDir, 'keel.sqlite'))
  db.transaction(() => {
    migrations.forEach((migration, index) => db.exec(index === 1 ? OLD_CORE_MIGRATION_2 : migration))
    db.pragma(`user_version = ${migrations.length}`)
    const insert = db.prepare('INSERT INTO lab_objects (id, type, data) VALUES (?, ?, ?)')
    for (const record of [POOL, HOST]) insert.run(record.id, record.type, JSON.stringify(record))
    db.prepare("INSERT INTO lab_meta (key, value) VALUES ('seeded_at', '1')").run()
  })()
  db.close()
  return dataDir
}

const labVersion = (db: Db): unknown =>
  db.prepare('SELECT version FROM schema_versions WHERE component = ?').pluck().get(LAB_COMPONENT)

const labTables = (db: Db): unknown[] =>
  db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'lab_%' ORDER BY name").pluck().all()

t.test('a data directory of the old layout opens and keeps its lab', async (t) => {
  const dataDir = oldDataDir()
  removeLater(t, dataDir)
  const { db, driver } = await openLab(t, { dataDir, keep: true })
  t.equal(db.pragma('user_version', { simple: true }), migrations.length, 'the core version is unchanged')
  t.equal(labVersion(db), labMigrations.length, 'the lab adopted its tables')
  t.same([...driver.objectsOfType('pool')], [POOL], 'the objects are kept, not seeded over')
  t.same([...driver.objectsOfType('host')], [HOST])
  t.equal(driver.countOfType('VM'), 0)
  driver.applyChanges([{ kind: 'update', object: { ...POOL, name_label: 'renamed' } }])
  t.equal(driver.getObject(POOL.id)?.['name_label'], 'renamed', 'and the lab still writes to them')
})

t.test('a fresh data directory gets the lab tables when the lab opens', async (t) => {
  const { db, driver } = await openLab(t)
  t.same(labTables(db), ['lab_meta', 'lab_objects', 'lab_objects_by_type'])
  t.equal(labVersion(db), labMigrations.length)
  t.ok(driver.countOfType('VM') > 0, 'seeded')
})

t.test('the core migrations no longer make the lab tables', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-core-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const db = new Database(join(dataDir, 'keel.sqlite'))
  t.teardown(() => db.close())
  for (const migration of migrations) db.exec(migration)
  t.same(labTables(db), [])
})
