import { BIG, ddl, KEY, SERIAL_KEY } from '../platform/store/ddl.js';
import { MODULE_MIGRATIONS, type ModuleSchema } from '../platform/store/module-schema.js';

/**
 * The core tables (accounts and keys, request claims, devboxes, snapshots, executions, logs, jobs), one
 * version sequence for both databases: SQLite's v1..v9 as they were, each step spelled per dialect (ddl.ts).
 * JSON columns hold the nested wire-level shapes (metadata, launch parameters) the domain reads whole.
 */
const steps = [
  // v1: accounts, API keys (hashed), idempotency replay cache
  ddl`CREATE TABLE accounts (
     id ${KEY} PRIMARY KEY,
     name TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL
   );
   CREATE TABLE api_keys (
     id ${KEY} PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name TEXT,
     kind TEXT NOT NULL CHECK (kind IN ('standard', 'restricted')),
     secret_hash TEXT NOT NULL UNIQUE,
     scopes TEXT NOT NULL DEFAULT '[]',
     expires_at_ms ${BIG},
     create_time_ms ${BIG} NOT NULL
   );
   CREATE TABLE idempotency (
     account_id TEXT NOT NULL,
     request_id TEXT NOT NULL,
     route TEXT NOT NULL,
     status INTEGER NOT NULL,
     body TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL,
     PRIMARY KEY (account_id, request_id, route)
   );`,
  // v2: devboxes, disk snapshots, executions and devbox logs
  ddl`CREATE TABLE devboxes (
     id ${KEY} PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name TEXT,
     status TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL,
     end_time_ms ${BIG},
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
     keep_alive_at_ms ${BIG} NOT NULL
   );
   CREATE INDEX devboxes_account ON devboxes (account_id, id);
   CREATE INDEX devboxes_status ON devboxes (status);
   CREATE TABLE snapshots (
     id ${KEY} PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     source_devbox_id TEXT NOT NULL,
     source_blueprint_id TEXT,
     name TEXT,
     metadata TEXT NOT NULL,
     commit_message TEXT,
     status TEXT NOT NULL,
     error_message TEXT,
     size_bytes ${BIG},
     layers TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL
   );
   CREATE INDEX snapshots_account ON snapshots (account_id, id);
   CREATE TABLE executions (
     id ${KEY} PRIMARY KEY,
     account_id TEXT NOT NULL,
     devbox_id TEXT NOT NULL,
     command TEXT NOT NULL,
     command_id TEXT,
     shell_name TEXT,
     kind TEXT NOT NULL,
     status TEXT NOT NULL,
     exit_status INTEGER,
     create_time_ms ${BIG} NOT NULL,
     end_time_ms ${BIG}
   );
   CREATE INDEX executions_devbox ON executions (devbox_id, id);
   CREATE UNIQUE INDEX executions_command_id ON executions (devbox_id, command_id) WHERE command_id IS NOT NULL;
   CREATE TABLE devbox_logs (
     seq ${SERIAL_KEY},
     devbox_id TEXT NOT NULL,
     timestamp_ms ${BIG} NOT NULL,
     level TEXT NOT NULL,
     source TEXT NOT NULL,
     cmd TEXT,
     cmd_id TEXT,
     exit_code INTEGER,
     message TEXT,
     shell_name TEXT
   );
   CREATE INDEX devbox_logs_devbox ON devbox_logs (devbox_id, seq);`,
  // v3: execution output sizes (the output itself lives in files under <dataDir>/executions)
  ddl`ALTER TABLE executions ADD COLUMN stdout_bytes ${BIG} NOT NULL DEFAULT 0;
   ALTER TABLE executions ADD COLUMN stderr_bytes ${BIG} NOT NULL DEFAULT 0;
   CREATE INDEX executions_unfinished ON executions (status) WHERE status != 'completed';`,
  // v4: API key revocation (a revoked key stays for the record and never authenticates again) and the
  // last four characters of each secret, so a list can show which key is which without the secret
  ddl`ALTER TABLE api_keys ADD COLUMN revoked_at_ms ${BIG};
   ALTER TABLE api_keys ADD COLUMN secret_last4 TEXT;
   CREATE INDEX api_keys_account ON api_keys (account_id, id);`,
  // v5: x-request-id claims: a row is written before the handler runs (owner + lease while in flight, the
  // answer once done) and keyed with a hash of the request; the replay cache it replaces holds 10 minutes only.
  ddl`DROP TABLE idempotency;
   CREATE TABLE idempotency (
     account_id TEXT NOT NULL,
     request_id TEXT NOT NULL,
     route TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     owner TEXT,
     lease_until_ms ${BIG},
     status INTEGER,
     body TEXT,
     create_time_ms ${BIG} NOT NULL,
     PRIMARY KEY (account_id, request_id, route),
     CHECK ((owner IS NULL) = (status IS NOT NULL))
   );`,
  // v6: the node that runs each devbox (and takes each snapshot), so servers sharing a database touch only
  // their own at start; rows from before have '' and belong to whichever server opens the data dir. At most
  // one snapshot in progress per devbox is a constraint, not only a check in the service.
  ddl`ALTER TABLE devboxes ADD COLUMN node TEXT NOT NULL DEFAULT '';
   ALTER TABLE snapshots ADD COLUMN node TEXT NOT NULL DEFAULT '';
   CREATE INDEX devboxes_node_status ON devboxes (node, status);
   CREATE UNIQUE INDEX snapshots_one_in_progress ON snapshots (source_devbox_id) WHERE status = 'in_progress';`,
  // v7: durable jobs (snapshot captures, suspends; later builds and runs), resumed by their node at start.
  // Snapshots caught in progress and devboxes caught suspending by an older server get their job here.
  ddl`CREATE TABLE jobs (
     id ${KEY} PRIMARY KEY,
     kind TEXT NOT NULL,
     subject_id TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
     attempts INTEGER NOT NULL DEFAULT 0,
     last_error TEXT,
     run_after_ms ${BIG} NOT NULL,
     node TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL,
     update_time_ms ${BIG} NOT NULL
   );
   CREATE INDEX jobs_open ON jobs (node, create_time_ms) WHERE state IN ('pending', 'running');
   CREATE UNIQUE INDEX jobs_one_open ON jobs (kind, subject_id) WHERE state IN ('pending', 'running');
   INSERT INTO jobs (id, kind, subject_id, state, attempts, run_after_ms, node, create_time_ms, update_time_ms)
     SELECT 'job_snapshot_' || id, 'snapshot.capture', id, 'pending', 0, 0, node, create_time_ms, create_time_ms
     FROM snapshots WHERE status = 'in_progress';
   INSERT INTO jobs (id, kind, subject_id, state, attempts, run_after_ms, node, create_time_ms, update_time_ms)
     SELECT 'job_suspend_' || id, 'devbox.suspend', id, 'pending', 0, 0, node, create_time_ms, create_time_ms
     FROM devboxes WHERE status = 'suspending';`,
  // v8: the versions each module's tables are at, by module (module-schema.ts creates it before reading any).
  MODULE_MIGRATIONS,
  // v9: the view parts a box may have anything for (Devbox.viewParts); NULL for boxes from before: read them all.
  ddl`ALTER TABLE devboxes ADD COLUMN view_parts TEXT;`,
];

/**
 * Migrated first (resources/core-store.ts). Its versions were the database's own counter before they were
 * recorded in module_migrations: SQLite's user_version (1..9, these steps) and PostgreSQL's schema_migrations
 * (1..4: its v1 was v1..v6 here at once, its v2..v4 are v7..v9).
 */
export const CORE_SCHEMA: ModuleSchema = {
  module: 'core',
  steps,
  legacy: { sqlite: { last: 9, offset: 0 }, postgres: { last: 4, offset: 5 } },
};
