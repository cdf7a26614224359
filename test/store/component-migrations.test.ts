import Database from 'better-sqlite3'
import t from 'tap'
import { migrateComponent } from '../../src/store/component-migrations.js'
import type { Db } from '../../src/store/database.js'

const openMemory = (t: { teardown(fn: () => unknown): void }): Db => {
  const db = new Database(':memory:')
  t.teardown(() => db.close())
  return db
}

const version = (db: Db, component: string): unknown =>
  db.prepare('SELECT version FROM schema_versions WHERE component = ?').pluck().get(component)

const tables = (db: Db): unknown[] =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all()

const first = ['CREATE TABLE a (x)', 'CREATE TABLE b (y)']

t.test('a component migrates forward once, in order, and records its version', async (t) => {
  const db = openMemory(t)
  migrateComponent(db, 'one', first)
  t.equal(version(db, 'one'), 2)
  t.same(tables(db), ['a', 'b', 'schema_versions'])
  migrateComponent(db, 'one', first)
  t.equal(version(db, 'one'), 2, 'applied migrations are not run again')
  migrateComponent(db, 'one', [...first, 'ALTER TABLE a ADD COLUMN z'])
  t.equal(version(db, 'one'), 3, 'a new migration is applied on its own')
  t.same(db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('a'), ['x', 'z'])
})

t.test('components keep separate numbering', async (t) => {
  const db = openMemory(t)
  migrateComponent(db, 'one', first)
  migrateComponent(db, 'two', ['CREATE TABLE c (z)'])
  t.equal(version(db, 'one'), 2)
  t.equal(version(db, 'two'), 1)
  t.equal(db.pragma('user_version', { simple: true }), 0, 'the core version is not touched')
})

t.test('a failing migration changes nothing and leaves the version where it was', async (t) => {
  const db = openMemory(t)
  migrateComponent(db, 'one', first)
  t.throws(() => migrateComponent(db, 'one', [...first, 'CREATE TABLE c (z); CREATE TABLE a (x)']), /already exists/)
  t.equal(version(db, 'one'), 2)
  t.same(tables(db), ['a', 'b', 'schema_versions'], 'the half of the migration that ran is rolled back')
})

t.test('a data directory from a newer version is refused', async (t) => {
  const db = openMemory(t)
  migrateComponent(db, 'one', first)
  t.throws(() => migrateComponent(db, 'one', first.slice(0, 1)), /schema version 2 of one is newer than this Keel \(1\)/)
})
