import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Benchmark jobs (beta) in the API reference (/docs). */
export const benchmarkJobOperations: OperationDocs = {
  tag: 'Benchmark jobs',
  operations: {
    'POST /v1/benchmark_jobs': {
      sdk: ['benchmarkJobs.create'],
      summary: 'Create a benchmark job',
      description:
        'Runs an agent on a benchmark or a list of scenarios with no client attached: devboxd starts each scenario run, runs the agent ' +
        'command in its box (`MODEL_NAME`, `PROBLEM_STATEMENT`), scores it, and retries failed attempts up to `n_attempts`.',
    },
    'GET /v1/benchmark_jobs': {
      sdk: ['benchmarkJobs.list'],
      summary: 'List benchmark jobs',
      description: "The account's benchmark jobs in cursor pages; `name` and `search` filter.",
    },
    'GET /v1/benchmark_jobs/{id}': {
      sdk: ['benchmarkJobs.retrieve'],
      summary: 'Get a benchmark job',
      description: 'The job read live: per agent config its scenario outcomes so far, and the runs still going.',
    },
  },
};
