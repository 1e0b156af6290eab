/**
 * PostgreSQL schema migrations, applied in order and recorded in `schema_migrations`. Append only. The
 * schema matches SQLite's (after its v6) column for column, so the shared SQL stores serve both: JSON columns
 * are TEXT here too (the domain reads them whole), times are BIGINT milliseconds, ids sort bytewise (C).
 */
export const PG_MIGRATIONS: string[] = [
  // v1: the whole schema as of SQLite v6
  `CREATE TABLE accounts (
     id TEXT COLLATE "C" PRIMARY KEY,
     name TEXT NOT NULL,
     create_time_ms BIGINT NOT NULL
   );
   CREATE TABLE api_keys (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name TEXT,
     kind TEXT NOT NULL CHECK (kind IN ('standard', 'restricted')),
     secret_hash TEXT NOT NULL UNIQUE,
     scopes TEXT NOT NULL DEFAULT '[]',
     expires_at_ms BIGINT,
     create_time_ms BIGINT NOT NULL,
     revoked_at_ms BIGINT,
     secret_last4 TEXT
   );
   CREATE INDEX api_keys_account ON api_keys (account_id, id);
   CREATE TABLE idempotency (
     account_id TEXT NOT NULL,
     request_id TEXT NOT NULL,
     route TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     owner TEXT,
     lease_until_ms BIGINT,
     status INTEGER,
     body TEXT,
     create_time_ms BIGINT NOT NULL,
     PRIMARY KEY (account_id, request_id, route),
     CHECK ((owner IS NULL) = (status IS NOT NULL))
   );
   CREATE TABLE devboxes (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name TEXT,
     status TEXT NOT NULL,
     create_time_ms BIGINT NOT NULL,
     end_time_ms BIGINT,
     failure_reason TEXT,
     shutdown_reason TEXT,
     metadata TEXT NOT NULL,
     launch_parameters TEXT NOT NULL,
     environment TEXT NOT NULL,
     entrypoint TEXT,
     blueprint_id TEXT,
     snapshot_id TEXT,
     layers TEXT NOT NULL,
     sandbox TEXT NOT NULL,
     state_transitions TEXT NOT NULL,
     keep_alive_at_ms BIGINT NOT NULL,
     node TEXT NOT NULL DEFAULT ''
   );
   CREATE INDEX devboxes_account ON devboxes (account_id, id);
   CREATE INDEX devboxes_status ON devboxes (status);
   CREATE INDEX devboxes_node_status ON devboxes (node, status);
   CREATE TABLE snapshots (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     source_devbox_id TEXT NOT NULL,
     source_blueprint_id TEXT,
     name TEXT,
     metadata TEXT NOT NULL,
     commit_message TEXT,
     status TEXT NOT NULL,
     error_message TEXT,
     size_bytes BIGINT,
     layers TEXT NOT NULL,
     create_time_ms BIGINT NOT NULL,
     node TEXT NOT NULL DEFAULT ''
   );
   CREATE INDEX snapshots_account ON snapshots (account_id, id);
   CREATE UNIQUE INDEX snapshots_one_in_progress ON snapshots (source_devbox_id) WHERE status = 'in_progress';
   CREATE TABLE executions (
     id TEXT COLLATE "C" PRIMARY KEY,
     account_id TEXT NOT NULL,
     devbox_id TEXT NOT NULL,
     command TEXT NOT NULL,
     command_id TEXT,
     shell_name TEXT,
     kind TEXT NOT NULL,
     status TEXT NOT NULL,
     exit_status INTEGER,
     create_time_ms BIGINT NOT NULL,
     end_time_ms BIGINT,
     stdout_bytes BIGINT NOT NULL DEFAULT 0,
     stderr_bytes BIGINT NOT NULL DEFAULT 0
   );
   CREATE INDEX executions_devbox ON executions (devbox_id, id);
   CREATE UNIQUE INDEX executions_command_id ON executions (devbox_id, command_id) WHERE command_id IS NOT NULL;
   CREATE INDEX executions_unfinished ON executions (status) WHERE status != 'completed';
   CREATE TABLE devbox_logs (
     seq BIGSERIAL PRIMARY KEY,
     devbox_id TEXT NOT NULL,
     timestamp_ms BIGINT NOT NULL,
     level TEXT NOT NULL,
     source TEXT NOT NULL,
     cmd TEXT,
     cmd_id TEXT,
     exit_code INTEGER,
     message TEXT,
     shell_name TEXT
   );
   CREATE INDEX devbox_logs_devbox ON devbox_logs (devbox_id, seq);`,
  // v2: durable jobs (snapshot captures, suspends; later builds and runs), resumed by their node at start.
  // Snapshots caught in progress and devboxes caught suspending by an older server get their job here.
  `CREATE TABLE jobs (
     id TEXT COLLATE "C" PRIMARY KEY,
     kind TEXT NOT NULL,
     subject_id TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
     attempts INTEGER NOT NULL DEFAULT 0,
     last_error TEXT,
     run_after_ms BIGINT NOT NULL,
     node TEXT NOT NULL,
     create_time_ms BIGINT NOT NULL,
     update_time_ms BIGINT NOT NULL
   );
   CREATE INDEX jobs_open ON jobs (node, create_time_ms) WHERE state IN ('pending', 'running');
   CREATE UNIQUE INDEX jobs_one_open ON jobs (kind, subject_id) WHERE state IN ('pending', 'running');
   INSERT INTO jobs (id, kind, subject_id, state, attempts, run_after_ms, node, create_time_ms, update_time_ms)
     SELECT 'job_snapshot_' || id, 'snapshot.capture', id, 'pending', 0, 0, node, create_time_ms, create_time_ms
     FROM snapshots WHERE status = 'in_progress';
   INSERT INTO jobs (id, kind, subject_id, state, attempts, run_after_ms, node, create_time_ms, update_time_ms)
     SELECT 'job_suspend_' || id, 'devbox.suspend', id, 'pending', 0, 0, node, create_time_ms, create_time_ms
     FROM devboxes WHERE status = 'suspending';`,
  // v3: the migrations each resource module brings for its own tables (see module-schema.ts), by module.
  `CREATE TABLE module_migrations (
     module TEXT NOT NULL,
     version INTEGER NOT NULL,
     applied_at_ms BIGINT NOT NULL,
     PRIMARY KEY (module, version)
   );`,
  // v4: the view parts a box may have anything for (Devbox.viewParts); NULL for boxes from before: read them all.
  `ALTER TABLE devboxes ADD COLUMN view_parts TEXT;`,
];
