import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Benchmarks and their runs in the API reference (/docs). */
export const benchmarkOperations: OperationDocs = {
  tag: 'Benchmarks',
  operations: {
    'POST /v1/benchmarks': {
      sdk: ['benchmarks.create'],
      summary: 'Create a benchmark',
      description: 'A named, ordered set of scenarios (own or public) to run together, with the environment variables and secrets they need.',
    },
    'GET /v1/benchmarks': {
      sdk: ['benchmarks.list'],
      summary: 'List benchmarks',
      description: "The account's own benchmarks in cursor pages; `name` and `search` filter.",
    },
    'GET /v1/benchmarks/list_public': {
      sdk: ['benchmarks.listPublic'],
      summary: 'List public benchmarks',
      description: 'Benchmarks every account may read and run, in cursor pages.',
    },
    'GET /v1/benchmarks/{id}': {
      sdk: ['benchmarks.retrieve'],
      summary: 'Get a benchmark',
      description: 'A benchmark the account can read: its own, or a public one.',
    },
    'POST /v1/benchmarks/{id}': {
      sdk: ['benchmarks.update'],
      summary: 'Update a benchmark',
      description: 'A field null stays as it is, one given replaces the stored one whole. A public benchmark is a 403.',
    },
    'POST /v1/benchmarks/{id}/scenarios': {
      sdk: ['benchmarks.updateScenarios'],
      summary: "Add and remove a benchmark's scenarios",
      description: 'Appends `scenarios_to_add`, then removes `scenarios_to_remove` (an id the benchmark lacks is no error).',
    },
    'GET /v1/benchmarks/{id}/definitions': {
      sdk: ['benchmarks.definitions'],
      summary: "List a benchmark's scenarios",
      description: "The benchmark's scenarios in its order, in cursor pages (the cursor is a scenario id).",
    },
    'POST /v1/benchmarks/start_run': {
      sdk: ['benchmarks.startRun'],
      tag: 'Benchmark runs',
      summary: 'Start a benchmark run',
      description:
        "Checks every requirement first (the benchmark's and each scenario's variables and secrets), then answers the run `running` and " +
        'starts one scenario run per scenario, a bounded number at once, with `runProfile` applied to each.',
    },
    'GET /v1/benchmark_runs': {
      sdk: ['benchmarkRuns.list'],
      tag: 'Benchmark runs',
      summary: 'List benchmark runs',
      description: "The account's benchmark runs in cursor pages; `benchmark_id`, `state`, `name` and `search` filter.",
    },
    'GET /v1/benchmark_runs/{id}': {
      sdk: ['benchmarkRuns.retrieve'],
      tag: 'Benchmark runs',
      summary: 'Get a benchmark run',
      description: "The run with its state and, once it ended, its score: the mean of its scenario runs' scores (0 for one that did not complete).",
    },
    'GET /v1/benchmark_runs/{id}/scenario_runs': {
      sdk: ['benchmarkRuns.listScenarioRuns'],
      tag: 'Benchmark runs',
      summary: "List a benchmark run's scenario runs",
      description: 'The scenario runs the benchmark run started, in cursor pages; `state` and `search` filter.',
    },
    'POST /v1/benchmark_runs/{id}/cancel': {
      sdk: ['benchmarkRuns.cancel'],
      tag: 'Benchmark runs',
      summary: 'Cancel a benchmark run',
      description:
        'Starts no more scenario runs, cancels the open ones (their boxes shut down) and scores over those that completed. An ended run ' +
        'is answered as it is.',
    },
    'POST /v1/benchmark_runs/{id}/complete': {
      sdk: ['benchmarkRuns.complete'],
      tag: 'Benchmark runs',
      summary: 'Complete a benchmark run',
      description:
        'Scores and completes its open scenario runs, then the run. While scenarios still wait for a slot it is a 400 (it would score ' +
        'part of the benchmark). A run completes by itself once every scenario run ended.',
    },
  },
};
