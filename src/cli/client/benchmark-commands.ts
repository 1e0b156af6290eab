import { setTimeout as sleep } from 'node:timers/promises';
import type Runloop from '@runloop/api-client';
import type { Command, Io } from '../parse.js';
import { CLIENT_OPTIONS, clientOf, type Options, show, table } from './connect.js';

/** How often --follow reads the run's scenario runs. */
const POLL_MS = 1000;

const score = (s: number | null | undefined) => (s == null ? '-' : String(Math.round(s * 1000) / 1000));

/**
 * Follows a benchmark run: a line per scenario run each time its state changes (its score once it has one),
 * until the benchmark run leaves `running`; answers it then. The scenario runs are read a page at a time, so
 * a benchmark of thousands of scenarios costs pages, not one answer holding them all.
 */
async function follow(api: Runloop, io: Io, runId: string) {
  const seen = new Map<string, string>();
  for (;;) {
    for await (const r of api.benchmarkRuns.listScenarioRuns(runId, { limit: 100 })) {
      const now = `${r.state} ${score(r.scoring_contract_result?.score)}`;
      if (seen.get(r.id) === now) continue;
      seen.set(r.id, now);
      io.out(`${r.id}\t${r.scenario_id}\t${r.devbox_id}\t${r.state}\t${score(r.scoring_contract_result?.score)}\n`);
    }
    const run = await api.benchmarkRuns.retrieve(runId);
    if (run.state !== 'running') return run;
    await sleep(POLL_MS);
  }
}

/** `devboxd benchmark ...`: the account's benchmarks (and the public ones), and a run followed live. */
export function benchmarkCommands(io: Io): Command[] {
  return [
    {
      words: ['benchmark', 'list'],
      args: [],
      options: { ...CLIENT_OPTIONS, public: { type: 'boolean', help: 'the public benchmarks (the built-in one among them) instead' } },
      summary: "the account's benchmarks, or the public ones: id, name, scenarios",
      run: async (_args, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd benchmark list');
        const all = [];
        for await (const b of o.public ? api.benchmarks.listPublic({ limit: 100 }) : api.benchmarks.list({ limit: 100 })) all.push(b);
        show(io, o, { benchmarks: all }, (v) =>
          table(
            ['ID', 'NAME', 'SCENARIOS'],
            v.benchmarks.map((b) => [b.id, b.name, String(b.scenarioIds.length)]),
          ),
        );
        return 0;
      },
    },
    {
      words: ['benchmark', 'run'],
      args: ['BENCHMARK_ID'],
      options: {
        ...CLIENT_OPTIONS,
        name: { type: 'string', placeholder: 'NAME', help: 'a name for the run' },
        follow: { type: 'boolean', help: 'a line per scenario run as its state changes (id, scenario, devbox, state, score), until the run ends' },
      },
      summary: `start a run of a benchmark: each scenario gets a devbox, for an agent to work in and complete; with
--follow, waits until the run ends and exits 0 if it completed, 1 otherwise (it prints the run last)`,
      run: async ({ BENCHMARK_ID }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd benchmark run BENCHMARK_ID');
        const started = await api.benchmarks.startRun({ benchmark_id: BENCHMARK_ID!, ...(o.name ? { run_name: o.name as string } : {}) });
        const run = o.follow ? await follow(api, io, started.id) : started;
        show(io, o, run, (r) => table(['RUN', 'STATE', 'SCORE'], [[r.id, r.state, score(r.score)]]));
        return !o.follow || run.state === 'completed' ? 0 : 1;
      },
    },
  ];
}
