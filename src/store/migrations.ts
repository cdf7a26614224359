/**
 * Versioned schema migrations, applied in order inside one transaction each.
 * Never edit a released migration: append a new one.
 */
export const migrations: readonly string[] = [
  // 1: users, groups, tokens
  `
  CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE COLLATE NOCASE,
    name TEXT,
    permission TEXT NOT NULL CHECK (permission IN ('none', 'admin')),
    password_hash TEXT NOT NULL,
    preferences TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
  );
  CREATE TABLE groups (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE group_users (
    group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
  );
  CREATE INDEX group_users_by_user ON group_users(user_id);
  CREATE TABLE tokens (
    secret_hash TEXT PRIMARY KEY,
    identifier TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expiration INTEGER NOT NULL,
    description TEXT,
    client_id TEXT
  );
  CREATE INDEX tokens_by_user ON tokens(user_id);
  CREATE UNIQUE INDEX tokens_by_client ON tokens(user_id, client_id) WHERE client_id IS NOT NULL;
  `,
  // 2: was the lab's object index; the lab owns its tables now (src/driver/lab/migrations.ts) and adopts these where they exist
  '',
  // 3: tasks, kept across restarts (pending ones become interrupted)
  `
  CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX tasks_by_status ON tasks(status);
  `,
  // 4: access control: roles, their privileges, assignments, and the audit trail of their changes
  `
  CREATE TABLE acl_roles (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    template_id INTEGER UNIQUE,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE acl_privileges (
    id TEXT PRIMARY KEY,
    role_id TEXT NOT NULL REFERENCES acl_roles(id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    action TEXT NOT NULL,
    effect TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
    selector TEXT
  );
  CREATE INDEX acl_privileges_by_role ON acl_privileges(role_id);
  CREATE TABLE acl_user_roles (
    role_id TEXT NOT NULL REFERENCES acl_roles(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, user_id)
  );
  CREATE TABLE acl_group_roles (
    role_id TEXT NOT NULL REFERENCES acl_roles(id) ON DELETE CASCADE,
    group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, group_id)
  );
  CREATE TABLE acl_audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    time INTEGER NOT NULL,
    actor_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id TEXT NOT NULL,
    before TEXT,
    after TEXT
  );
  `,
  // 5: the installation that runs each task, so that a start interrupts only its own (rows from before are adopted at the next start)
  'ALTER TABLE tasks ADD COLUMN installation_id TEXT',
]
