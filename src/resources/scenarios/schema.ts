import { BIG, ddl, KEY } from '../../platform/store/ddl.js';
import type { ModuleSchema } from '../../platform/store/module-schema.js';

/**
 * Custom scorers, scenarios and scenario runs. Structured parts (input context, environment, scoring contract,
 * scoring result, maps) are JSON text: they are read and written whole with their row and never queried
 * into. A scorer's type names it within its account (custom_scorer_type refers to it), so it is unique there.
 */
const tables = ddl`
  CREATE TABLE scenario_scorers (
    id ${KEY} PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    type ${KEY} NOT NULL,
    bash_script TEXT NOT NULL,
    create_time_ms ${BIG} NOT NULL,
    update_time_ms ${BIG} NOT NULL,
    CONSTRAINT scenario_scorers_account_type UNIQUE (account_id, type)
  );
  CREATE TABLE scenarios (
    id ${KEY} PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name ${KEY} NOT NULL,
    status TEXT NOT NULL,
    is_public ${BIG} NOT NULL,
    validation_type TEXT,
    definition TEXT NOT NULL,
    metadata TEXT NOT NULL,
    create_time_ms ${BIG} NOT NULL,
    update_time_ms ${BIG} NOT NULL
  );
  CREATE INDEX scenarios_account ON scenarios (account_id, status, id);
  CREATE INDEX scenarios_public ON scenarios (is_public, status, id);
  CREATE TABLE scenario_runs (
    id ${KEY} PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    scenario_id ${KEY} NOT NULL REFERENCES scenarios(id),
    devbox_id TEXT NOT NULL,
    state TEXT NOT NULL,
    name ${KEY},
    benchmark_run_id ${KEY},
    purpose TEXT,
    metadata TEXT NOT NULL,
    environment_variables TEXT NOT NULL,
    secrets_provided TEXT NOT NULL,
    scoring_result TEXT,
    complete_requested ${BIG} NOT NULL,
    start_time_ms ${BIG} NOT NULL,
    end_time_ms ${BIG},
    end_reason TEXT
  );
  CREATE INDEX scenario_runs_account ON scenario_runs (account_id, id);
  CREATE INDEX scenario_runs_benchmark ON scenario_runs (benchmark_run_id);
  CREATE INDEX scenario_runs_devbox ON scenario_runs (devbox_id);
  CREATE INDEX scenario_runs_open ON scenario_runs (state);`;

/**
 * v2: a benchmark run starts each of its scenarios once; two servers pumping one run (or a retried start)
 * get a refusal instead of a second scenario run and box.
 */
const benchmarkOnce = ddl`
  CREATE UNIQUE INDEX scenario_runs_benchmark_scenario ON scenario_runs (benchmark_run_id, scenario_id)
    WHERE benchmark_run_id IS NOT NULL;`;

/**
 * v3: a benchmark job retries a failed trial with a fresh scenario run of the same scenario in the same benchmark
 * run: the attempt number joins the key, so each attempt still starts once.
 */
const attempts = ddl`
  ALTER TABLE scenario_runs ADD COLUMN attempt ${BIG} NOT NULL DEFAULT 0;
  DROP INDEX scenario_runs_benchmark_scenario;
  CREATE UNIQUE INDEX scenario_runs_benchmark_attempt ON scenario_runs (benchmark_run_id, scenario_id, attempt)
    WHERE benchmark_run_id IS NOT NULL;`;

export const SCENARIOS_SCHEMA: ModuleSchema = {
  module: 'scenarios',
  steps: [tables, benchmarkOnce, attempts],
};
