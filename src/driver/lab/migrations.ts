/** The lab's own schema, applied with src/store/component-migrations.ts under the name `lab`. */
export const LAB_COMPONENT = 'lab'

export const labMigrations: readonly string[] = [
  // 1: the object index. Data directories from before the lab owned its tables already have
  // them (core migration 2 made them), so this adopts existing ones rather than failing.
  `
  CREATE TABLE IF NOT EXISTS lab_objects (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS lab_objects_by_type ON lab_objects(type);
  CREATE TABLE IF NOT EXISTS lab_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
]
