import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Benchmark jobs and their trials. A job's resolved spec (scenarios, agent configs, orchestrator settings,
 * the benchmark run of each agent config) is JSON text read and written whole with its row. A trial row is
 * written before each step it takes (scenario run started, agent launched, ended), so a restart resumes every
 * trial from its row: one row per attempt of one scenario with one agent config.
 */
const tables = ddl`
  CREATE TABLE benchmark_jobs (
    id ${KEY} PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    node TEXT NOT NULL,
    spec TEXT NOT NULL,
    failure_reason TEXT,
    create_time_ms ${BIG} NOT NULL,
    end_time_ms ${BIG}
  );
  CREATE INDEX benchmark_jobs_account ON benchmark_jobs (account_id, id);
  CREATE INDEX benchmark_jobs_open ON benchmark_jobs (node, state);
  CREATE TABLE benchmark_job_trials (
    id ${KEY} PRIMARY KEY,
    job_id ${KEY} NOT NULL REFERENCES benchmark_jobs(id) ON DELETE CASCADE,
    agent_index INTEGER NOT NULL,
    scenario_id ${KEY} NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    scenario_run_id TEXT,
    devbox_id TEXT,
    execution_id TEXT,
    agent_start_ms ${BIG},
    score DOUBLE PRECISION,
    failure_type TEXT,
    failure_message TEXT,
    start_time_ms ${BIG} NOT NULL,
    end_time_ms ${BIG},
    CONSTRAINT benchmark_job_trials_once UNIQUE (job_id, agent_index, scenario_id, attempt)
  );`;

export const BENCHMARK_JOBS_SCHEMA: ModuleSchema = {
  module: 'benchmark-jobs',
  steps: [tables],
};
