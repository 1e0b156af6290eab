import { type Section, section } from '../schema.js';

/** `limits:` file transfers at once, and what one account may hold of axons, agents and scenarios. */
export const LIMITS: Section = section('limits', 'file transfers at once, and what one account may hold of axons, agents and scenarios', [
  [
    'DEVBOXD_FILE_CONTENTS_CONCURRENCY',
    'integer',
    '`4`',
    '`read_file_contents` / `write_file_contents` requests held in memory at once (a file up to 64 MiB, a body up to the body limit)',
  ],
  [
    'DEVBOXD_FILE_CONTENTS_QUEUE',
    'integer',
    '`64`',
    'such requests that wait for a slot; past it they get 429 with `Retry-After: 1` (the SDK waits and retries)',
  ],
  [
    'DEVBOXD_FILE_TRANSFER_CONCURRENCY',
    'integer',
    '`32`',
    '`upload_file` / `download_file` streams running at once (each holds up to a few MiB of stream buffers: HTTP/2 windows, pipes); one account runs at most half',
  ],
  [
    'DEVBOXD_FILE_TRANSFER_QUEUE',
    'integer',
    '`256`',
    'such transfers that wait for a slot (one account at most half); past it they get 429 with `Retry-After: 1`',
  ],
  [
    'DEVBOXD_UPLOAD_STALL_MS',
    'integer',
    '`60000`',
    'an `upload_file` whose client sends no byte for this long while the server waits for one (e.g. a body shorter than its `content-length`) gets 408 and changes nothing',
  ],
  [
    'DEVBOXD_AXON_ACCOUNT_MAX',
    'integer',
    '`1000`',
    "most axons (not deleted) one account holds; a create past it gets 403 naming it. Each axon keeps its newest 10 000 events (up to 256 KiB each, `DEVBOXD_AXON_EVENT_BYTES` in all) and a SQL database of at most 64 MiB, so this bounds an account's disk use by axons",
  ],
  [
    'DEVBOXD_AXON_EVENT_BYTES',
    'integer',
    '`67108864` (64 MiB)',
    "payload bytes (UTF-8) an axon keeps: a publish past it drops the axon's oldest events, as the 10 000-event count does, in the transaction that stores it; a payload larger than this is a 413 naming it",
  ],
  [
    'DEVBOXD_AXON_ACCOUNT_EVENT_BYTES',
    'integer',
    '`1073741824` (1 GiB)',
    "payload bytes kept across an account's axons: a publish that would take it past this is a 403 naming it and changes nothing (no sequence taken, nothing dropped); one that drops as much as it adds (an axon at its own bound) still goes; deleting axons frees their bytes",
  ],
  [
    'DEVBOXD_AXON_STREAM_STALL_SECONDS',
    'integer',
    '`30`',
    'how long an axon SSE stream waits for a client that does not read (a write that does not drain): past it the connection is cut and its stream slot freed',
  ],
  ['DEVBOXD_AGENT_ACCOUNT_MAX', 'integer', '`1000`', 'most agents one account holds at once; a create past it gets 403 naming it'],
  ['DEVBOXD_SCENARIO_ACCOUNT_MAX_SCENARIOS', 'integer', '`10000`', 'most scenarios one account holds (archived included); a create past it gets 403 naming it'],
  ['DEVBOXD_SCENARIO_ACCOUNT_MAX_SCORERS', 'integer', '`1000`', 'most custom scorers one account holds; a create past it gets 403 naming it'],
]);

/** `benchmarks:` benchmark runs and jobs: concurrency, quotas, leases (see "Evaluations"). */
export const BENCHMARKS: Section = section('benchmarks', 'benchmark runs and jobs: concurrency, quotas, leases (see "Evaluations")', [
  [
    'DEVBOXD_BENCHMARK_CONCURRENCY',
    'integer',
    '`8`',
    'scenario runs (each a devbox) one benchmark run keeps open at once, 1–1000; the next start as earlier ones end (complete, cancel, timeout, failure)',
  ],
  ['DEVBOXD_BENCHMARK_ACCOUNT_MAX_BENCHMARKS', 'integer', '`10000`', 'most benchmarks an account holds; a create past it gets 403'],
  [
    'DEVBOXD_BENCHMARK_ACCOUNT_MAX_RUNNING',
    'integer',
    '`4`',
    'most benchmark runs of one account running at once; a `start_run` past it gets 409 until one completes or is canceled (on PostgreSQL it holds across servers: starts of one account take an advisory lock)',
  ],
  [
    'DEVBOXD_BENCHMARK_JOB_ACCOUNT_MAX_RUNNING',
    'integer',
    '`4`',
    'most benchmark jobs of one account running at once; a create past it gets 409 until one ends',
  ],
  [
    'DEVBOXD_BENCHMARK_JOB_MAX_CONCURRENT_TRIALS',
    'integer',
    '`64`',
    'the largest `n_concurrent_trials` a benchmark job may ask for, 1–1000 (each trial holds a devbox); a larger one is a 400',
  ],
  [
    'DEVBOXD_BENCHMARK_LEASE_SEC',
    'integer',
    '`60`',
    "a running benchmark run's lease, 1–3600: its server renews it every third of it; once it lapses (that server gone or renamed) any server takes the run over. Servers sharing a database need clocks that agree within it",
  ],
]);
