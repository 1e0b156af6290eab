import { BIG, ddl, eachDialect, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Benchmarks and their runs. List-valued fields (scenario ids, required names) and maps are JSON text: they
 * are read and written whole with their record. A run keeps the scenario ids it started with and its run
 * profile, so a restart resumes it from its row and the scenario runs that carry its id.
 */
const tables = ddl`CREATE TABLE benchmarks (
     id ${KEY} PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name ${KEY} NOT NULL,
     is_public INTEGER NOT NULL,
     status TEXT NOT NULL,
     attribution TEXT,
     description TEXT,
     metadata TEXT NOT NULL,
     required_env TEXT NOT NULL,
     required_secrets TEXT NOT NULL,
     scenario_ids TEXT NOT NULL,
     create_time_ms ${BIG} NOT NULL,
     update_time_ms ${BIG} NOT NULL,
     CONSTRAINT benchmarks_account_name UNIQUE (account_id, name)
   );
   CREATE INDEX benchmarks_public ON benchmarks (is_public, id);
   CREATE TABLE benchmark_runs (
     id ${KEY} PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     benchmark_id ${KEY} NOT NULL REFERENCES benchmarks(id),
     node TEXT NOT NULL,
     name TEXT,
     state TEXT NOT NULL,
     metadata TEXT NOT NULL,
     profile TEXT NOT NULL,
     scenario_ids TEXT NOT NULL,
     score DOUBLE PRECISION,
     start_time_ms ${BIG} NOT NULL,
     end_time_ms ${BIG},
     failure_reason TEXT
   );
   CREATE INDEX benchmark_runs_account ON benchmark_runs (account_id, id);
   CREATE INDEX benchmark_runs_open ON benchmark_runs (node, state);`;

/**
 * v2: a running run's lease. Its server renews it; once it lapses (the server gone, renamed, or down longer
 * than the lease) any server takes the run over. Rows from v1 start lapsed: the next sweep claims them.
 */
const lease = ddl`
  ALTER TABLE benchmark_runs ADD COLUMN lease_until_ms ${BIG} NOT NULL DEFAULT 0;
  CREATE INDEX benchmark_runs_lease ON benchmark_runs (state, lease_until_ms);`;

/**
 * v3: runs a benchmark job drives carry its id (null for start_run's): the pump leaves them to the job and they
 * do not count against the account's running-run limit (the job's trial concurrency bounds their boxes). A job
 * over a list of scenarios has no benchmark, so `benchmark_id` may be null (SQLite drops a NOT NULL only by
 * copying the table; nothing references benchmark_runs, so the copy replaces it whole).
 */
const jobRuns = eachDialect({
  sqlite: ddl`
  CREATE TABLE benchmark_runs_v3 (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    benchmark_id TEXT REFERENCES benchmarks(id),
    node TEXT NOT NULL,
    name TEXT,
    state TEXT NOT NULL,
    metadata TEXT NOT NULL,
    profile TEXT NOT NULL,
    scenario_ids TEXT NOT NULL,
    score DOUBLE PRECISION,
    start_time_ms INTEGER NOT NULL,
    end_time_ms INTEGER,
    failure_reason TEXT,
    lease_until_ms INTEGER NOT NULL DEFAULT 0,
    job_id TEXT
  );
  INSERT INTO benchmark_runs_v3 (id, account_id, benchmark_id, node, name, state, metadata, profile, scenario_ids, score, start_time_ms,
    end_time_ms, failure_reason, lease_until_ms)
    SELECT id, account_id, benchmark_id, node, name, state, metadata, profile, scenario_ids, score, start_time_ms, end_time_ms, failure_reason,
      lease_until_ms FROM benchmark_runs;
  DROP TABLE benchmark_runs;
  ALTER TABLE benchmark_runs_v3 RENAME TO benchmark_runs;
  CREATE INDEX benchmark_runs_account ON benchmark_runs (account_id, id);
  CREATE INDEX benchmark_runs_open ON benchmark_runs (node, state);
  CREATE INDEX benchmark_runs_lease ON benchmark_runs (state, lease_until_ms);`,
  postgres: ddl`
  ALTER TABLE benchmark_runs ALTER COLUMN benchmark_id DROP NOT NULL;
  ALTER TABLE benchmark_runs ADD COLUMN job_id TEXT COLLATE "C";`,
});

export const BENCHMARKS_SCHEMA: ModuleSchema = {
  module: 'benchmarks',
  steps: [tables, lease, jobRuns],
};
