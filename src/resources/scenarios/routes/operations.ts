import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** Scenarios, their runs and custom scorers in the API reference (/docs): a section each. */
export const scenarioOperations: OperationDocs = {
  tag: 'Scenarios',
  operations: {
    'POST /v1/scenarios': {
      sdk: ['scenarios.create'],
      summary: 'Create a scenario',
      description:
        'A repeatable evaluation: the environment a run starts in (a blueprint or snapshot and launch parameters), the problem given to ' +
        'the agent, and the scoring functions that grade the result (weights summing to 1).',
    },
    'GET /v1/scenarios': {
      sdk: ['scenarios.list'],
      summary: 'List scenarios',
      description: "The account's scenarios that are not archived, in cursor pages; `name`, `search`, `validation_type` and `benchmark_id` filter.",
    },
    'GET /v1/scenarios/list_public': {
      sdk: ['scenarios.listPublic'],
      summary: 'List public scenarios',
      description: 'Scenarios the server offers every account, in cursor pages.',
    },
    'GET /v1/scenarios/{id}': {
      sdk: ['scenarios.retrieve'],
      summary: 'Get a scenario',
      description: 'A scenario the account can read (its own, archived ones included, or a public one).',
    },
    'POST /v1/scenarios/{id}': {
      sdk: ['scenarios.update'],
      summary: 'Update a scenario',
      description:
        'A field null stays as it is, one given replaces the stored one (`""` clears `reference_output`, `{}` the metadata). An archived scenario is read-only.',
    },
    'POST /v1/scenarios/{id}/archive': {
      sdk: ['scenarios.archive'],
      summary: 'Archive a scenario',
      description: 'The scenario leaves the lists and can start no more runs; it can still be read by id.',
    },
    'POST /v1/scenarios/start_run': {
      sdk: ['scenarios.startRun'],
      summary: 'Start a scenario run',
      description:
        "Checks the scenario's required environment variables and secrets against `runProfile`, then creates the run's devbox and answers " +
        'the run `running`. The agent works in the box; `score` and `complete` grade it.',
    },
    'GET /v1/scenarios/runs': {
      sdk: ['scenarios.runs.list'],
      tag: 'Scenario runs',
      summary: 'List scenario runs',
      description: "The account's runs in cursor pages (at most 200 a page); `scenario_id`, `benchmark_run_id`, `state`, `name` and `search` filter.",
    },
    'GET /v1/scenarios/runs/{id}': {
      sdk: ['scenarios.runs.retrieve'],
      tag: 'Scenario runs',
      summary: 'Get a scenario run',
      description: 'The run with its state and, once scored, its scoring result per function.',
    },
    'POST /v1/scenarios/runs/{id}/score': {
      sdk: ['scenarios.runs.score'],
      tag: 'Scenario runs',
      summary: 'Score a scenario run',
      description:
        "Starts the scenario's scoring functions in the run's box (resuming it if suspended) and answers the run `scoring`; it becomes " +
        '`scored` with the result. Scoring survives a server restart.',
    },
    'POST /v1/scenarios/runs/{id}/complete': {
      sdk: ['scenarios.runs.complete'],
      tag: 'Scenario runs',
      summary: 'Complete a scenario run',
      description:
        "Scores the run if it was not (holding the request until scoring ends, within the scenario's `scorer_timeout_sec`), shuts its box " +
        'down and answers it `completed` with the result. A completed run is answered as it is.',
    },
    'POST /v1/scenarios/runs/{id}/cancel': {
      sdk: ['scenarios.runs.cancel'],
      tag: 'Scenario runs',
      summary: 'Cancel a scenario run',
      description: 'Ends an open run `canceled` and shuts its box down; a run already over is answered as it is.',
    },
    'POST /v1/scenarios/runs/{id}/download_logs': {
      sdk: ['scenarios.runs.downloadLogs'],
      tag: 'Scenario runs',
      summary: "Download a scenario run's logs",
      description: "A zip, streamed: `run.json`, each scoring function's log (`scoring/<function>.log`) and the devbox log (`devbox.log`).",
    },
    'POST /v1/scenarios/scorers': {
      sdk: ['scenarios.scorers.create'],
      tag: 'Scorers',
      summary: 'Create a custom scorer',
      description:
        'A `type` name and a `bash_script` that scores a run in its box; scenarios name it in a `custom_scorer` scoring function, whose ' +
        '`scorer_params` reach the script as `RUNLOOP_SCORER_PARAMS`.',
    },
    'GET /v1/scenarios/scorers': {
      sdk: ['scenarios.scorers.list'],
      tag: 'Scorers',
      summary: 'List custom scorers',
      description: "The account's custom scorers in cursor pages; `search` (an id or a type) filters.",
    },
    'GET /v1/scenarios/scorers/{id}': {
      sdk: ['scenarios.scorers.retrieve'],
      tag: 'Scorers',
      summary: 'Get a custom scorer',
      description: 'One custom scorer of the account, with its script.',
    },
    'POST /v1/scenarios/scorers/{id}': {
      sdk: ['scenarios.scorers.update'],
      tag: 'Scorers',
      summary: 'Update a custom scorer',
      description: 'Replaces its `type` and `bash_script`.',
    },
  },
};
