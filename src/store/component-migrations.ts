import type { Db } from './database.js'

/**
 * Brings one component's tables up to date. A component (a driver, say) owns
 * its schema and its numbering, kept in `schema_versions`, so it can evolve
 * without a core migration. Each migration runs in one transaction with the
 * version it reaches; never edit a released one, append a new one.
 */
export function migrateComponent(db: Db, component: string, migrations: readonly string[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL)')
  const read = db.prepare('SELECT version FROM schema_versions WHERE component = ?').pluck()
  const write = db.prepare(
    'INSERT INTO schema_versions (component, version) VALUES (?, ?) ON CONFLICT (component) DO UPDATE SET version = excluded.version',
  )
  const current = (read.get(component) as number | undefined) ?? 0
  if (current > migrations.length) {
    throw new Error(`data directory schema version ${current} of ${component} is newer than this Keel (${migrations.length})`)
  }
  for (let version = current; version < migrations.length; version++) {
    db.transaction(() => {
      db.exec(migrations[version] as string)
      write.run(component, version + 1)
    })()
  }
}
